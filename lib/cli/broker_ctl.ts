// `bin/broker_ctl`: runs one command on the local running node over its
// control socket (lib/ctl/protocol.ts). It loads none of the node's code: it
// finds the socket from the configuration, sends the words, prints the answer.
import { connect } from 'node:net'
import { isAbsolute, join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { EXIT, formatUsage } from '../ctl/command.js'
import { ProgressDisplay, type ProgressMode } from '../ctl/progress-display.js'
import { controlSocketPath, type CtlProgressLine, type CtlRequest, type CtlResponse } from '../ctl/protocol.js'
import { NODE_USAGE, PLUGIN_COMMANDS } from '../ctl/usage.js'
import { loadConfig } from '../config/load.js'
import { ConfigError } from '../config/parse.js'
import { INSTALL_ROOT } from '../root.js'
import { versionLine } from './version.js'

const OPTIONS = `Usage: broker_ctl [options] <command> [<args>]

Runs a command on the broker node running from this install.

Options:
  --json                print the answer as JSON (for scripts)
  -c, --config FILE     configuration file that names the node's data directory (default: etc/broker.conf)
  -d, --data-dir DIR    the node's data directory (its control socket is DIR/broker_ctl.sock)
  --socket PATH         the control socket itself
  --timeout SECONDS     how long to wait for a word from the node (default 60)
  --progress            progress of long operations (drain, plugin load, a big answer) as lines on
                        stderr; on a terminal it is shown anyway, as one line that updates
  -v, --version         print the version and exit
  -h, --help            show this help; \`broker_ctl help <command>\` shows one command

Exit status: 0 done, 1 the command failed, 2 bad command or arguments, 3 the node cannot be reached.
`

function offlineHelp (): string {
  const usage = formatUsage(Object.values(NODE_USAGE).flat())
  const plugins = PLUGIN_COMMANDS.map(([command, plugin]) => `  ${command.padEnd(10)} (with ${plugin} loaded)`).join('\n')
  return `${OPTIONS}\nCommands:\n${usage}\n\nCommands plugins add, listed by \`broker_ctl help\` while the node runs:\n${plugins}\n`
}

async function socketPath (args: { config?: string, 'data-dir'?: string, socket?: string }): Promise<string> {
  if (args.socket !== undefined) return resolve(args.socket)
  if (args['data-dir'] !== undefined) return controlSocketPath(resolve(args['data-dir']))
  const config = await loadConfig({ file: args.config ?? join(INSTALL_ROOT, 'etc', 'broker.conf'), env: process.env })
  const dataDir = config.get('node.data_dir')
  return controlSocketPath(isAbsolute(dataDir) ? dataDir : resolve(INSTALL_ROOT, dataDir))
}

/** A path argument means a file where broker_ctl runs, not where the node runs. */
function absolutePaths (argv: string[]): string[] {
  if (argv[0] === 'trace' && (argv[1] === 'client' || argv[1] === 'topic') && argv.length === 4 && argv[3] !== 'off') {
    return [...argv.slice(0, 3), resolve(argv[3])]
  }
  return argv
}

class Unreachable extends Error {}

/** A line the node sends before its answer (protocol.ts); the answer itself is never parsed twice. */
function progressText (line: string): string | undefined {
  if (!line.startsWith('{"progress":')) return undefined
  try {
    return String((JSON.parse(line) as CtlProgressLine).progress)
  } catch {
    return undefined
  }
}

/** Sends the request and reads the answer; `timeoutMs` is how long the node may say nothing (a followed drain talks all along). */
async function ask (path: string, request: CtlRequest, timeoutMs: number, display: ProgressDisplay | undefined): Promise<CtlResponse> {
  return await new Promise((resolvePromise, reject) => {
    const socket = connect(path)
    let answer: string | undefined
    let pending = ''
    let pendingBytes = 0
    let timer: NodeJS.Timeout | undefined
    const quiet = (): void => {
      clearTimeout(timer)
      timer = setTimeout(() => {
        socket.destroy()
        reject(new Unreachable(`the node did not answer within ${timeoutMs / 1000} s (${path})`))
      }, timeoutMs)
    }
    const line = (text: string): void => {
      const progress = progressText(text)
      if (progress === undefined) answer = text
      else display?.show(progress)
    }
    quiet()
    socket.setEncoding('utf8')
    socket.on('connect', () => socket.write(`${JSON.stringify(request)}\n`))
    socket.on('data', (chunk: string) => {
      quiet()
      let from = 0
      // only the chunk is searched for line ends, so a big answer is not scanned again at each chunk
      for (let end = chunk.indexOf('\n'); end >= 0; end = chunk.indexOf('\n', from)) {
        line(pending + chunk.slice(from, end))
        pending = ''
        pendingBytes = 0
        from = end + 1
      }
      pending += chunk.slice(from)
      pendingBytes += Buffer.byteLength(chunk) - Buffer.byteLength(chunk.slice(0, from))
      if (pending !== '') display?.receiving(pendingBytes)
    })
    socket.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer)
      const why = err.code === 'ENOENT' || err.code === 'ECONNREFUSED' ? 'the node is not running' : err.message
      reject(new Unreachable(`${why} (no answer on ${path})`))
    })
    socket.on('end', () => {
      clearTimeout(timer)
      if (pending !== '') line(pending)
      try {
        resolvePromise(JSON.parse(answer ?? '') as CtlResponse)
      } catch {
        reject(new Unreachable(`the node closed the connection without an answer (${path})`))
      }
    })
  })
}

function print (json: boolean, response: CtlResponse): number {
  if (response.ok) {
    if (json) process.stdout.write(`${JSON.stringify(response.data, null, 2)}\n`)
    else if (response.text !== '') process.stdout.write(`${response.text}\n`)
    return EXIT.ok
  }
  if (json) process.stdout.write(`${JSON.stringify({ error: response.error, exit: response.exit })}\n`)
  else process.stderr.write(`${response.error}\n${response.usage === undefined ? '' : `\nUsage:\n${response.usage}\n`}`)
  return response.exit
}

async function main (): Promise<number> {
  let parsed
  try {
    parsed = parseArgs({
      options: {
        json: { type: 'boolean' },
        config: { type: 'string', short: 'c' },
        'data-dir': { type: 'string', short: 'd' },
        socket: { type: 'string' },
        timeout: { type: 'string' },
        progress: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' }
      },
      allowPositionals: true,
      strict: true
    })
  } catch (err) {
    process.stderr.write(`broker_ctl: ${(err as Error).message}\n\n${OPTIONS}`)
    return EXIT.usage
  }
  const { values, positionals } = parsed
  if (values.version === true) {
    process.stdout.write(`${versionLine('broker_ctl')}\n`)
    return EXIT.ok
  }
  const json = values.json === true
  const timeout = Number(values.timeout ?? '60')
  if (!Number.isFinite(timeout) || timeout <= 0) {
    process.stderr.write(`broker_ctl: --timeout must be a positive number of seconds\n`)
    return EXIT.usage
  }
  // `broker_ctl`, `broker_ctl --help`, `broker_ctl users --help`: the node's help, which knows the plugins' commands
  const helpAsked = positionals.length === 0 || values.help === true
  const argv = helpAsked ? ['help', ...positionals.slice(0, 1)] : absolutePaths(positionals)
  let path: string
  try {
    path = await socketPath(values)
  } catch (err) {
    const message = err instanceof ConfigError ? err.message : (err as Error).message
    process.stderr.write(`broker_ctl: ${message}\n`)
    return EXIT.usage
  }
  // a person at a terminal sees progress without asking; a script asks with --progress
  const mode: ProgressMode | undefined = values.progress === true ? 'lines' : process.stdout.isTTY && process.stderr.isTTY ? 'terminal' : undefined
  const display = mode === undefined ? undefined : new ProgressDisplay(mode)
  try {
    const response = await ask(path, { argv, progress: display !== undefined }, timeout * 1000, display).finally(() => display?.done())
    if (helpAsked && response.ok && !json) process.stdout.write(OPTIONS + '\nCommands:\n')
    return print(json, response)
  } catch (err) {
    if (!(err instanceof Unreachable)) throw err
    if (argv[0] === 'help' && argv.length === 1) {
      process.stdout.write(offlineHelp())
      return EXIT.ok
    }
    if (json) process.stdout.write(`${JSON.stringify({ error: err.message, exit: EXIT.unreachable })}\n`)
    else process.stderr.write(`broker_ctl: ${err.message}\n`)
    return EXIT.unreachable
  }
}

process.exitCode = await main()
