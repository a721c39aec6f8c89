// `bin/broker`: starts one node in the foreground from etc/broker.conf.
import { once } from 'node:events'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { loadConfig } from '../config/load.js'
import type { Config } from '../config/store.js'
import { logShadowedOverrides } from '../config/overrides.js'
import { ConfigError } from '../config/parse.js'
import { createNodeLogger, logSettings } from '../log.js'
import type { BrokerNode } from '../node.js'
import { INSTALL_ROOT } from '../root.js'
import { ProcessSignals, type SignalLog } from './signals.js'
import { versionLine } from './version.js'

const USAGE = `Usage: broker [options]

Starts one broker node in the foreground.

Options:
  -c, --config FILE     configuration file (default: etc/broker.conf)
  -d, --data-dir DIR    data directory (same as --set node.data_dir=DIR)
  -n, --node-name NAME  node name (same as --set node.name=NAME)
  -s, --set KEY=VALUE   override one setting; repeatable
      --lenient-plugins a plugin whose settings are refused at start is
                        logged and skipped (default: the node does not start)
  -v, --version         print the version and exit
  -h, --help            show this help

Settings are read from the file, then from the changes made at run time
(kept in <data dir>/configs.override), then from environment variables
BROKER_<KEY> (dots written as __, e.g. BROKER_LISTENER__TCP__EXTERNAL=1884),
then from --set.

Signals: SIGTERM or SIGINT stops the node cleanly (a second one is ignored;
SIGKILL stops at once); SIGHUP reloads the configuration's live settings,
the ACL file, the TLS certificates and the plugins' settings.

Exit status: 0 stopped by a signal (also during start-up), 1 the node could
not start (a refused setting prints file:line: key: why) or did not stop
cleanly, 2 bad options.
`

/** Log lines before the node's logger exists (a signal while the configuration loads). */
const stderrLog: SignalLog = {
  info: (_fields, message) => { process.stderr.write(`broker: ${message}\n`) },
  warn: (_fields, message) => { process.stderr.write(`broker: ${message}\n`) }
}

async function main (): Promise<number> {
  // every file and folder the node makes (store, logs, traces, settings) is its user's only
  process.umask(0o077)
  const signals = new ProcessSignals(stderrLog)
  let args
  try {
    args = parseArgs({
      options: {
        config: { type: 'string', short: 'c' },
        'data-dir': { type: 'string', short: 'd' },
        'node-name': { type: 'string', short: 'n' },
        set: { type: 'string', short: 's', multiple: true },
        'lenient-plugins': { type: 'boolean' },
        version: { type: 'boolean', short: 'v' },
        help: { type: 'boolean', short: 'h' }
      },
      strict: true
    }).values
  } catch (err) {
    process.stderr.write(`broker: ${(err as Error).message}\n\n${USAGE}`)
    return 2
  }
  if (args.help === true) {
    process.stdout.write(USAGE)
    return 0
  }
  if (args.version === true) {
    process.stdout.write(`${versionLine('broker')}\n`)
    return 0
  }
  const sets = [...(args.set ?? [])]
  if (args['data-dir'] !== undefined) sets.push(`node.data_dir=${args['data-dir']}`)
  if (args['node-name'] !== undefined) sets.push(`node.name=${args['node-name']}`)
  const load = async (): Promise<Config> => await loadConfig({ file: args.config ?? join(INSTALL_ROOT, 'etc', 'broker.conf'), env: process.env, sets, root: INSTALL_ROOT })

  let node: BrokerNode
  try {
    const config = await load()
    const logger = createNodeLogger(logSettings(config, INSTALL_ROOT))
    signals.logTo(logger)
    // a crash is also a record in log.file (written at once), before Node prints the stack and exits
    process.on('uncaughtExceptionMonitor', (err, origin) => logger.fatal({ err, origin }, 'fatal error: the node stops'))
    logShadowedOverrides(config, logger)
    if (signals.stopSignal.aborted) return 0
    // imported only now: --version and --help do not load the node
    const { BrokerNode } = await import('../node.js')
    try {
      node = await BrokerNode.start({ config, logger, root: INSTALL_ROOT, lenientPlugins: args['lenient-plugins'] === true, signal: signals.stopSignal, collectStartupGarbage: true })
    } catch (err) {
      if (!signals.stopSignal.aborted) throw err
      logger.info({ signal: signals.stopSignal.reason }, 'stopped during start-up')
      return 0
    }
  } catch (err) {
    if (signals.stopSignal.aborted) return 0
    const message = err instanceof ConfigError ? err.message : `cannot start: ${(err as Error).message}`
    process.stderr.write(`broker: ${message}\n`)
    return 1
  }
  const { NodeReload } = await import('../node-reload.js')
  const reloads = new NodeReload(node, load)
  signals.running(() => {
    reloads.reload().catch((err: Error) => node.logger.error({ err }, 'reload failed'))
  })
  if (!signals.stopSignal.aborted) await once(signals.stopSignal, 'abort')
  signals.stopping()
  try {
    await node.stop()
    return 0
  } catch (err) {
    node.logger.error({ err }, 'stop failed')
    return 1
  }
}

process.exitCode = await main()
