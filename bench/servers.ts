// Starts and stops the two measured servers as child processes, reads their
// resident memory, and keeps the list of every child the runner started so
// that none outlives it.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

export type ServerKind = 'bare' | 'broker'

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

/** Resident memory of a process in KiB (VmRSS of /proc/<pid>/status). */
export function rssKiB (pid: number): number {
  const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  if (match === null) throw new Error(`no VmRSS for pid ${pid}`)
  return Number(match[1])
}

export class Server {
  readonly kind: ServerKind
  readonly port: number
  readonly child: ChildProcess
  /** Rejects if the process ends before stop() is called. */
  readonly died: Promise<never>
  /** Set when the process ended before stop() was called. */
  deathError: Error | null = null
  private readonly exited: Promise<void>
  private readonly dataDir: string | null
  private output = ''
  private stopping = false

  private constructor (kind: ServerKind, port: number, child: ChildProcess, dataDir: string | null) {
    this.kind = kind
    this.port = port
    this.child = child
    this.dataDir = dataDir
    const keep = (chunk: Buffer): void => { this.output = (this.output + chunk.toString()).slice(-4000) }
    child.stdout?.on('data', keep)
    child.stderr?.on('data', keep)
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()))
    this.died = new Promise<never>((_resolve, reject) => {
      child.once('exit', (code, signal) => {
        if (this.stopping) return
        this.deathError = new Error(`${this.label} exited unexpectedly (${signal ?? `code ${code}`})${this.tail()}`)
        reject(this.deathError)
      })
    })
    this.died.catch(() => { /* observed by whoever races it */ })
  }

  get label (): string {
    return this.kind === 'bare' ? 'bare aedes' : 'broker'
  }

  get pid (): number {
    if (this.child.pid === undefined) throw new Error(`${this.label} has no pid`)
    return this.child.pid
  }

  static async start (kind: ServerKind): Promise<Server> {
    const port = await freePort()
    let dataDir: string | null = null
    let args: string[]
    if (kind === 'bare') {
      args = [join(ROOT, 'dist', 'bench', 'bare-aedes.js'), String(port)]
    } else {
      dataDir = mkdtempSync(join(tmpdir(), 'bench-broker-'))
      tempDirs.add(dataDir)
      args = [join(ROOT, 'bin', 'broker'), '--data-dir', dataDir,
        '--set', `listener.tcp.external=127.0.0.1:${port}`,
        '--set', 'listener.ssl.external=off',
        '--set', 'listener.ws.external=off',
        '--set', 'listener.wss.external=off',
        '--set', 'log.console.level=error',
        '--set', 'listener.tcp.external.max_conn_rate=0',
        '--set', 'zone.external.max_subscriptions=0']
    }
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    track(child)
    const server = new Server(kind, port, child, dataDir)
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
