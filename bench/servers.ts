// Starts and stops the measured servers (bare Aedes, Mosquitto, broker nodes,
// and the redis-server of the cluster section) as child processes, reads their
// resident memory, and keeps the list of every child the runner started so
// that none outlives it.
import { spawn, type ChildProcess } from 'node:child_process'
import type { LoadWindow } from './scenarios.js'
import { accessSync, constants, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export type ServerKind = 'bare' | 'mosquitto' | 'broker'

/** The install folder: dist/bench/servers.js → ../.. */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url))

const READY_POLL_MS = 50
const READY_TIMEOUT_MS = 20_000
const STOP_TIMEOUT_MS = 15_000

const children = new Set<ChildProcess>()
const tempDirs = new Set<string>()

/** Registers a child so killAllNow() can reach it; it is dropped when it exits. */
export function track (child: ChildProcess): void {
  children.add(child)
  child.once('exit', () => children.delete(child))
}

/** Last resort on exit or error: SIGKILL every child still running, remove temp dirs. Synchronous. */
export function killAllNow (): void {
  for (const child of children) child.kill('SIGKILL')
  children.clear()
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true })
  tempDirs.clear()
}

export async function freePort (): Promise<number> {
  return await new Promise((resolve, reject) => {
    const srv = net.createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address()
      srv.close(() => typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port')))
    })
  })
}

/** Whether an executable of that name is on PATH. */
export function onPath (command: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => {
    if (dir === '') return false
    try {
      accessSync(join(dir, command), constants.X_OK)
      return true
    } catch {
      return false
    }
  })
}

/** Resident memory of a process in KiB (VmRSS of /proc/<pid>/status). */
export function rssKiB (pid: number): number {
  const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  if (match === null) throw new Error(`no VmRSS for pid ${pid}`)
  return Number(match[1])
}

/**
 * CPU time a process has used so far (user + system, all its threads), in ms,
 * from /proc/<pid>/stat; with `mainThread`, only its main thread's (the event
 * loop), from /proc/<pid>/task/<pid>/stat.
 */
export function cpuMs (pid: number, mainThread = false): number {
  return statCpuMs(mainThread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`)
}

/** user + system CPU (ms) from a `/proc/…/stat` file */
function statCpuMs (file: string): number {
  const fields = readFileSync(file, 'utf8').replace(/^.*\) /s, '').split(' ')
  // after the command: state is field 3, utime 14 and stime 15 (clock ticks, 100 per second on Linux)
  return (Number(fields[11]) + Number(fields[12])) * 10
}

/**
 * CPU time (ms) of each of a process's threads so far, by `<name>:<tid>` (`/proc/<pid>/task/<tid>/comm`;
 * Node 20 names its worker threads and V8's helpers all `node`, so the tid, in order of creation, tells
 * them apart) and `<name> (main)` for the event loop. A thread that ended is not counted: compare two
 * readings of long-lived threads.
 */
export function threadCpuMs (pid: number): Map<string, number> {
  const byName = new Map<string, number>()
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim()
      const label = tid === String(pid) ? `${name} (main)` : `${name}:${tid}`
      byName.set(label, (byName.get(label) ?? 0) + statCpuMs(`/proc/${pid}/task/${tid}/stat`))
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return byName
}

/** Each thread's CPU between two `threadCpuMs` readings, in µs per `count` (messages, events), the busiest first; threads that used none left out. */
export function threadUsPer (before: Map<string, number>, after: Map<string, number>, count: number): Array<[string, number]> {
  return [...after].map(([name, ms]): [string, number] => [name, (ms - (before.get(name) ?? 0)) * 1000 / count])
    .filter(([, us]) => us > 0).sort((a, b) => b[1] - a[1])
}

/**
 * `BENCH_CPU_PROF=<dir>`: a bare Aedes or broker server writes a V8 CPU profile
 * `<dir>/<scenario>-<kind>-<n>.cpuprofile` when it exits, and the runner the measured window beside it
 * (`….window.json`, process.hrtime ns, the clock of the profile's timestamps); read them with
 * `node dist/bench/cpu-parts.js`. Null when not asked for (or for Mosquitto).
 */
export function cpuProfile (scenario: string, kind: ServerKind | 'net' | 'broker-before'): { nodeArgs: string[], writeWindow: (load: LoadWindow) => void } | null {
  const dir = process.env.BENCH_CPU_PROF
  if (dir === undefined || dir === '' || kind === 'mosquitto') return null
  const name = `${scenario}-${kind}-${++profiles}`
  return {
    nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-name=${name}.cpuprofile`],
    writeWindow: (load) => writeFileSync(join(dir, `${name}.window.json`), JSON.stringify({ fromNs: String(load.fromNs), toNs: String(load.toNs) }))
  }
}
let profiles = 0

export interface NodeOptions {
  /** For messages, e.g. `cluster node a`; default `broker`. */
  label?: string
  /** `--node-name` */
  nodeName?: string
  /** Extra `--set key=value` settings, after the defaults. */
  settings?: Record<string, string>
  /** Plugins loaded at boot, in order, each with its `key = value` settings (its .conf file); default none. */
  plugins?: Record<string, Record<string, string>>
  /** Node flags before the script (bare Aedes and broker nodes), e.g. `--expose-gc` */
  nodeArgs?: string[]
  /** Extra environment variables of the process */
  env?: Record<string, string>
  /** Another install to run `bin/broker` from (a build before a change); default this one */
  root?: string
}

export class Server {
  readonly label: string
  readonly port: number
  readonly child: ChildProcess
  /** Rejects if the process ends before stop() is called. */
  readonly died: Promise<never>
  /** Set when the process ended before stop() was called. */
  deathError: Error | null = null
  private readonly exited: Promise<void>
  /** A broker node's data dir (its broker_ctl socket is there); null for other servers. */
  readonly dataDir: string | null
  private output = ''
  private stopping = false

  private constructor (label: string, port: number, child: ChildProcess, dataDir: string | null) {
    this.label = label
    this.port = port
    this.child = child
    this.dataDir = dataDir
    const keep = (chunk: Buffer): void => { this.output = (this.output + chunk.toString()).slice(-4000) }
    child.stdout?.on('data', keep)
    child.stderr?.on('data', keep)
    this.exited = new Promise((resolve) => {
      child.once('exit', () => resolve())
      child.once('error', () => { if (child.pid === undefined) resolve() })
    })
    this.died = new Promise<never>((_resolve, reject) => {
      child.once('exit', (code, signal) => {
        if (this.stopping) return
        this.deathError = new Error(`${this.label} exited unexpectedly (${signal ?? `code ${code}`})${this.tail()}`)
        reject(this.deathError)
      })
      // e.g. the command could not be started at all
      child.once('error', (err) => {
        if (this.stopping) return
        this.deathError ??= new Error(`${this.label}: ${err.message}`)
        reject(this.deathError)
      })
    })
    this.died.catch(() => { /* observed by whoever races it */ })
  }

  get pid (): number {
    if (this.child.pid === undefined) throw new Error(`${this.label} has no pid`)
    return this.child.pid
  }

  /** Bare Aedes, Mosquitto, or a broker node in a fresh data dir with no plugin loaded. */
  static async start (kind: ServerKind, options: NodeOptions = {}): Promise<Server> {
    const port = await freePort()
    const nodeArgs = options.nodeArgs ?? []
    if (kind === 'bare') return await Server.launch('bare aedes', port, process.execPath, [...nodeArgs, join(ROOT, 'dist', 'bench', 'bare-aedes.js'), String(port)], null, options.env)
    if (kind === 'mosquitto') return await Server.startMosquitto(port)
    const dataDir = newTempDir('bench-broker-')
    // A new install would load broker_management, whose HTTP listener takes port 8080: only the plugins asked for.
    const plugins = options.plugins ?? {}
    writeFileSync(join(dataDir, 'loaded_plugins'), Object.keys(plugins).map((name) => `${name}.\n`).join(''))
    const etcDir = join(dataDir, 'etc-plugins')
    mkdirSync(etcDir)
    for (const [name, values] of Object.entries(plugins)) {
      writeFileSync(join(etcDir, `${name}.conf`), Object.entries(values).map(([key, value]) => `${key} = ${value}\n`).join(''))
    }
    const settings: Record<string, string> = {
      'plugins.etc_dir': etcDir,
      'listener.tcp.external': `127.0.0.1:${port}`,
      'listener.ssl.external': 'off',
      'listener.ws.external': 'off',
      'listener.wss.external': 'off',
      'log.console.level': 'error',
      'listener.tcp.external.max_conn_rate': '0',
      'zone.external.max_subscriptions': '0',
      ...options.settings
    }
    const args = [...nodeArgs, join(options.root ?? ROOT, 'bin', 'broker'), '--data-dir', dataDir]
    if (options.nodeName !== undefined) args.push('--node-name', options.nodeName)
    for (const [key, value] of Object.entries(settings)) args.push('--set', `${key}=${value}`)
    return await Server.launch(options.label ?? 'broker', port, process.execPath, args, dataDir, options.env)
  }

  /** Debian's mosquitto on 127.0.0.1:<port>: anonymous clients, no persistence file, errors only in its log. Check onPath('mosquitto') first. */
  static async startMosquitto (port: number): Promise<Server> {
    const dir = newTempDir('bench-mosquitto-')
    const conf = join(dir, 'mosquitto.conf')
    writeFileSync(conf, [`listener ${port} 127.0.0.1`, 'allow_anonymous true', 'persistence false', 'log_dest stderr', 'log_type error', ''].join('\n'))
    return await Server.launch('mosquitto', port, 'mosquitto', ['-c', conf], dir)
  }

  /** Node's `net` alone answering a fixed CONNACK (bench/net-floor.ts) on 127.0.0.1:<port>: the connect storm's floor. */
  static async startNetFloor (nodeArgs: string[] = []): Promise<Server> {
    const port = await freePort()
    return await Server.launch('node net', port, process.execPath, [...nodeArgs, join(ROOT, 'dist', 'bench', 'net-floor.js'), String(port)], null)
  }

  /** The web hook endpoint of the `web-hook` section (bench/hook-endpoint.ts) on 127.0.0.1:<port>. */
  static async startHookEndpoint (): Promise<Server> {
    const port = await freePort()
    return await Server.launch('web hook endpoint', port, process.execPath, [join(ROOT, 'dist', 'bench', 'hook-endpoint.js'), String(port)], null)
  }

  /** A broker node's `broker_ctl <argv>` answer (its data, as `--json` shows it), through the node's control socket. */
  async ctl (argv: string[]): Promise<unknown> {
    if (this.dataDir === null) throw new Error(`${this.label} is not a broker node`)
    const socket = net.connect(join(this.dataDir, 'broker_ctl.sock'))
    let text = ''
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => { text += chunk })
    socket.write(JSON.stringify({ argv }) + '\n')
    await new Promise<void>((resolve, reject) => {
      socket.once('close', () => resolve())
      socket.once('error', reject)
    })
    const answer = JSON.parse(text) as { ok: boolean, data?: unknown, error?: string }
    if (!answer.ok) throw new Error(`broker_ctl ${argv.join(' ')}: ${answer.error ?? 'failed'}`)
    return answer.data
  }

  /** redis-server on 127.0.0.1, a free port and a temp dir, never writing a snapshot. Check onPath('redis-server') first. */
  static async startRedis (): Promise<Server> {
    const port = await freePort()
    const dir = newTempDir('bench-redis-')
    return await Server.launch('redis-server', port, 'redis-server', ['--bind', '127.0.0.1', '--port', String(port), '--dir', dir,
      '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--protected-mode', 'no', '--logfile', ''], dir)
  }

  private static async launch (label: string, port: number, command: string, args: string[], dataDir: string | null, env?: Record<string, string>): Promise<Server> {
    const child = spawn(command, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: env === undefined ? process.env : { ...process.env, ...env } })
    track(child)
    const server = new Server(label, port, child, dataDir)
    try {
      await Promise.race([server.waitReady(), server.died])
    } catch (err) {
      await server.stop()
      throw err
    }
    return server
  }

  /** SIGTERM, then SIGKILL if it has not exited after STOP_TIMEOUT_MS; removes the data dir. */
  async stop (): Promise<void> {
    this.stopping = true
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill('SIGTERM')
      const timer = setTimeout(() => this.child.kill('SIGKILL'), STOP_TIMEOUT_MS)
      await this.exited
      clearTimeout(timer)
    }
    if (this.dataDir !== null) {
      rmSync(this.dataDir, { recursive: true, force: true })
      tempDirs.delete(this.dataDir)
    }
  }

  private tail (): string {
    const text = this.output.trim()
    return text === '' ? '' : `; last output:\n${text}`
  }

  private async waitReady (): Promise<void> {
    const deadline = Date.now() + READY_TIMEOUT_MS
    while (Date.now() < deadline && !this.stopping) {
      if (await accepts(this.port)) return
      await new Promise((resolve) => setTimeout(resolve, READY_POLL_MS))
    }
    throw new Error(`${this.label} did not accept connections on port ${this.port} within ${READY_TIMEOUT_MS / 1000} s${this.tail()}`)
  }
}

function newTempDir (prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  tempDirs.add(dir)
  return dir
}

async function accepts (port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1')
    socket.setTimeout(1000)
    const done = (ok: boolean): void => { socket.destroy(); resolve(ok) }
    socket.once('connect', () => done(true))
    socket.once('error', () => done(false))
    socket.once('timeout', () => done(false))
  })
}
