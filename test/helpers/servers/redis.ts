// Debian's redis-server for tests: on 127.0.0.1, a free port, a temporary
// folder, no snapshots (`--save ''`), in the foreground. It can be stopped,
// killed (-9) and restarted on the same port and folder. A Sentinel is the
// same binary with `--sentinel` and a config file it may rewrite.
import { execFile } from 'node:child_process'
import { readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { freePort, tempDir } from '../broker.js'
import { killProcess, startProcess, stopProcess, type ServerProcess } from './process.js'

const run = promisify(execFile)

export interface RedisOptions {
  /** `requirepass` */
  password?: string
  /** extra `--name value` arguments, e.g. `['--appendonly', 'yes']` */
  args?: string[]
  /** reuse a port (default: a free one) */
  port?: number
}

export interface RedisServer {
  port: number
  dir: string
  password?: string
  /** true while the process runs */
  readonly running: boolean
  /** redis-cli with these arguments against the server; resolves with its output (trimmed) */
  cli: (...args: string[]) => Promise<string>
  /** pipes a file of commands (one a line, redis-cli syntax; `#` lines and blank lines left out) into redis-cli */
  seed: (file: string) => Promise<void>
  /** SIGTERM and wait */
  stop: () => Promise<void>
  /** SIGKILL and wait */
  kill: () => Promise<void>
  /** starts it again on the same port and folder (after stop or kill) */
  restart: () => Promise<void>
  /** stops it and removes the folder */
  close: () => Promise<void>
}

function cliArgs (port: number, password?: string): string[] {
  return ['-h', '127.0.0.1', '-p', String(port), ...(password === undefined ? [] : ['-a', password, '--no-auth-warning'])]
}

async function cli (port: number, password: string | undefined, args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', [...cliArgs(port, password), ...args])
  return stdout.trim()
}

async function seedFile (port: number, password: string | undefined, file: string): Promise<void> {
  const text = (await readFile(file, 'utf8')).split('\n').filter((line) => line.trim() !== '' && !line.startsWith('#')).join('\n') + '\n'
  await new Promise<void>((resolve, reject) => {
    const child = execFile('redis-cli', cliArgs(port, password), (err, stdout, stderr) => {
      if (err) reject(new Error(`seeding ${file} failed: ${stderr || err.message}`))
      else if (/ERR|Invalid/.test(stdout)) reject(new Error(`seeding ${file} failed: ${stdout}`))
      else resolve()
    })
    child.stdin!.end(text)
  })
}

export async function startRedis (options: RedisOptions = {}): Promise<RedisServer> {
  const dir = await tempDir('redis-test-')
  const port = options.port ?? await freePort()
  const { password } = options
  const args = [
    '--bind', '127.0.0.1', '--port', String(port), '--dir', dir, '--save', '', '--appendonly', 'no',
    '--daemonize', 'no', '--logfile', '', '--protected-mode', 'no',
    ...(password === undefined ? [] : ['--requirepass', password]),
    ...(options.args ?? [])
  ]
  let proc: ServerProcess | undefined
  const start = async (): Promise<void> => { proc = await startProcess('redis-server', args, /Ready to accept connections/) }
  try {
    await start()
  } catch (err) {
    await rm(dir, { recursive: true, force: true })
    throw err
  }
  return {
    port,
    dir,
    password,
    get running () { return proc !== undefined && proc.child.exitCode === null && proc.child.signalCode === null },
    cli: async (...cmd) => await cli(port, password, cmd),
    seed: async (file) => await seedFile(port, password, file),
    stop: async () => await stopProcess(proc),
    kill: async () => await killProcess(proc),
    restart: start,
    async close () {
      await stopProcess(proc)
      await rm(dir, { recursive: true, force: true })
    }
  }
}

export interface SentinelOptions {
  /** the master's port (on 127.0.0.1) */
  masterPort: number
  /** the master's name (`auth.redis.sentinel`) */
  name: string
  /** the master's requirepass */
  masterPassword?: string
  /** `down-after-milliseconds` (default 5000) */
  downAfterMs?: number
  /** `failover-timeout` (default: Redis' own, 3 minutes) */
  failoverTimeoutMs?: number
}

export interface SentinelServer {
  port: number
  /** sentinel commands through redis-cli */
  cli: (...args: string[]) => Promise<string>
  stop: () => Promise<void>
  kill: () => Promise<void>
  restart: () => Promise<void>
  close: () => Promise<void>
}

/** A Sentinel (quorum 1) monitoring one master; resolves once it monitors it. */
export async function startSentinel (options: SentinelOptions): Promise<SentinelServer> {
  const dir = await tempDir('redis-sentinel-test-')
  const port = await freePort()
  const conf = join(dir, 'sentinel.conf')
  await writeFile(conf, [
    `port ${port}`,
    'bind 127.0.0.1',
    `dir ${dir}`,
    'daemonize no',
    'logfile ""',
    'protected-mode no',
    `sentinel monitor ${options.name} 127.0.0.1 ${options.masterPort} 1`,
    ...(options.masterPassword === undefined ? [] : [`sentinel auth-pass ${options.name} ${options.masterPassword}`]),
    `sentinel down-after-milliseconds ${options.name} ${options.downAfterMs ?? 5000}`,
    ...(options.failoverTimeoutMs === undefined ? [] : [`sentinel failover-timeout ${options.name} ${options.failoverTimeoutMs}`]),
    ''
  ].join('\n'))
  let proc: ServerProcess | undefined
  const start = async (): Promise<void> => { proc = await startProcess('redis-server', [conf, '--sentinel'], /\+monitor master/) }
  try {
    await start()
  } catch (err) {
    await rm(dir, { recursive: true, force: true })
    throw err
  }
  return {
    port,
    cli: async (...cmd) => await cli(port, undefined, cmd),
    stop: async () => await stopProcess(proc),
    kill: async () => await killProcess(proc),
    restart: start,
    async close () {
      await stopProcess(proc)
      await rm(dir, { recursive: true, force: true })
    }
  }
}
