// `bin/broker`: starts one node in the foreground from etc/broker.conf.
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { loadConfig } from '../config/load.js'
import { logShadowedOverrides } from '../config/overrides.js'
import { ConfigError } from '../config/parse.js'
import { createNodeLogger, logSettings } from '../log.js'
import { BrokerNode } from '../node.js'
import { INSTALL_ROOT } from '../root.js'

const USAGE = `Usage: broker [options]

Starts one broker node in the foreground.

Options:
  -c, --config FILE     configuration file (default: etc/broker.conf)
  -d, --data-dir DIR    data directory (same as --set node.data_dir=DIR)
  -n, --node-name NAME  node name (same as --set node.name=NAME)
  -s, --set KEY=VALUE   override one setting; repeatable
  -h, --help            show this help

Settings are read from the file, then from the changes made at run time
(kept in <data dir>/configs.override), then from environment variables
BROKER_<KEY> (dots written as __, e.g. BROKER_LISTENER__TCP__EXTERNAL=1884),
then from --set. SIGTERM or SIGINT stops the node cleanly.
`

async function main (): Promise<number> {
  // every file and folder the node makes (store, logs, traces, settings) is its user's only
  process.umask(0o077)
  let args
  try {
    args = parseArgs({
      options: {
        config: { type: 'string', short: 'c' },
        'data-dir': { type: 'string', short: 'd' },
        'node-name': { type: 'string', short: 'n' },
        set: { type: 'string', short: 's', multiple: true },
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
  const sets = [...(args.set ?? [])]
  if (args['data-dir'] !== undefined) sets.push(`node.data_dir=${args['data-dir']}`)
  if (args['node-name'] !== undefined) sets.push(`node.name=${args['node-name']}`)

  let node: BrokerNode
  try {
    const config = await loadConfig({ file: args.config ?? join(INSTALL_ROOT, 'etc', 'broker.conf'), env: process.env, sets, root: INSTALL_ROOT })
    const logger = createNodeLogger(logSettings(config, INSTALL_ROOT))
    // a crash is also a record in log.file (written at once), before Node prints the stack and exits
    process.on('uncaughtExceptionMonitor', (err, origin) => logger.fatal({ err, origin }, 'fatal error: the node stops'))
    logShadowedOverrides(config, logger)
    node = await BrokerNode.start({ config, logger, root: INSTALL_ROOT })
  } catch (err) {
    const message = err instanceof ConfigError ? err.message : `cannot start: ${(err as Error).message}`
    process.stderr.write(`broker: ${message}\n`)
    return 1
  }
  return await new Promise<number>((resolve) => {
    const stop = (signal: string): void => {
      node.logger.info({ signal }, 'stopping')
      node.stop().then(() => resolve(0), (err: Error) => {
        node.logger.error({ err }, 'stop failed')
        resolve(1)
      })
    }
    process.once('SIGTERM', stop)
    process.once('SIGINT', stop)
  })
}

process.exitCode = await main()
