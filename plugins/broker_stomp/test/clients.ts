// The STOMP clients of the tests: stomp.py (Debian's python3-stomp, the real
// third-party client) driven through stomp_driver.py, and a raw TCP socket
// for what no well-behaved client sends (malformed and oversized frames,
// frames split across writes). Waits key on the events, with generous
// deadlines.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { connect, type Socket } from 'node:net'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { createInterface } from 'node:readline'

const DRIVER = fileURLToPath(new URL('./stomp_driver.py', import.meta.url))
/** Debian's python3, where python3-stomp is installed (not a pyenv shim's) */
const PYTHON = '/usr/bin/python3'
export const DEADLINE_MS = 15_000

export interface StompEvent {
  event: string
  headers?: Record<string, string>
  body?: string
  op?: string
  error?: string
}

/** Waits for an event matching `match` in a growing list, from `from` on. */
class EventLog<E> {
  readonly events: E[] = []
  #waiters: Array<() => void> = []
  closed = false

  push (event: E): void {
    this.events.push(event)
    for (const wake of this.#waiters.splice(0)) wake()
  }

  end (): void {
    this.closed = true
    for (const wake of this.#waiters.splice(0)) wake()
  }

  async next (match: (event: E) => boolean, what: string, from = 0, ms = DEADLINE_MS): Promise<E> {
    const deadline = Date.now() + ms
    for (;;) {
      const found = this.events.slice(from).find(match)
      if (found !== undefined) return found
      if (this.closed) throw new Error(`${what}: the client ended first; events: ${JSON.stringify(this.events).slice(0, 2000)}`)
      const left = deadline - Date.now()
      if (left <= 0) throw new Error(`${what}: not within ${ms} ms; events: ${JSON.stringify(this.events).slice(0, 2000)}`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left)
        this.#waiters.push(() => { clearTimeout(timer); resolve() })
      })
    }
  }
}

export interface ConnectOptions {
  version?: '1.0' | '1.1' | '1.2'
  login?: string
  passcode?: string
  heartbeats?: [number, number]
  headers?: Record<string, string>
}

/** stomp.py in a child process. */
export class StompPy {
  readonly log = new EventLog<StompEvent>()
  readonly #child: ChildProcessWithoutNullStreams
  #done = 0

  constructor (readonly port: number) {
    this.#child = spawn(PYTHON, [DRIVER], { stdio: ['pipe', 'pipe', 'pipe'] })
    this.#child.stderr.resume()
    const lines = createInterface({ input: this.#child.stdout })
    lines.on('line', (line) => this.log.push(JSON.parse(line) as StompEvent))
    this.#child.once('exit', () => this.log.end())
  }

  get events (): StompEvent[] {
    return this.log.events
  }

  /** Runs one driver command; resolves once the driver did it (not when the server answered). */
  async run (command: Record<string, unknown>): Promise<void> {
    const index = this.#done++
    this.#child.stdin.write(`${JSON.stringify(command)}\n`)
    let seen = 0
    const result = await this.log.next((e) => (e.event === 'done' || e.event === 'failed') && seen++ === index, `${String(command.op)} done`)
    if (result.event === 'failed') throw new Error(`${String(command.op)} failed in stomp.py: ${result.error ?? ''}`)
  }

  /** CONNECT; resolves with CONNECTED or the ERROR that refused it. */
  async connect (options: ConnectOptions = {}): Promise<StompEvent> {
    const from = this.events.length
    await this.run({ op: 'connect', port: this.port, version: options.version ?? '1.2', login: options.login, passcode: options.passcode, heartbeats: options.heartbeats ?? [0, 0], headers: options.headers })
    return await this.log.next((e) => e.event === 'connected' || e.event === 'error', 'CONNECTED or ERROR', from)
  }

  async next (event: string, match: (e: StompEvent) => boolean = () => true, from = 0): Promise<StompEvent> {
    return await this.log.next((e) => e.event === event && match(e), event, from)
  }

  /** The messages received so far. */
  messages (): StompEvent[] {
    return this.events.filter((e) => e.event === 'message')
  }

  async stop (): Promise<void> {
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return
    this.#child.stdin.end(`${JSON.stringify({ op: 'exit' })}\n`)
    const timer = setTimeout(() => this.#child.kill('SIGKILL'), 5000)
    await once(this.#child, 'exit')
    clearTimeout(timer)
  }
}

export interface RawFrame { command: string, headers: Record<string, string>, body: string }

/** A raw TCP connection that writes bytes as given and parses what the server sends (no escaping: for tests). */
export class RawStomp {
  readonly log = new EventLog<RawFrame>()
  readonly socket: Socket
  /** EOLs received between frames */
  heartbeats = 0
  #buffer = Buffer.alloc(0)

  private constructor (port: number) {
    this.socket = connect(port, '127.0.0.1')
    this.socket.on('data', (chunk: Buffer) => this.#data(chunk))
    this.socket.on('error', () => {})
    this.socket.on('close', () => this.log.end())
  }

  static async open (port: number): Promise<RawStomp> {
    const raw = new RawStomp(port)
    await once(raw.socket, 'connect')
    return raw
  }

  write (bytes: string | Buffer): void {
    this.socket.write(bytes)
  }

  async next (command: string, from = 0): Promise<RawFrame> {
    return await this.log.next((f) => f.command === command, command, from)
  }

  async closed (ms = DEADLINE_MS): Promise<void> {
    if (this.socket.closed) return
    const timer = setTimeout(() => this.socket.destroy(new Error('not closed by the server')), ms)
    await once(this.socket, 'close')
    clearTimeout(timer)
  }

  destroy (): void {
    this.socket.destroy()
  }

  #data (chunk: Buffer): void {
    this.#buffer = Buffer.concat([this.#buffer, chunk])
    for (;;) {
      while (this.#buffer.length > 0 && (this.#buffer[0] === 0x0a || this.#buffer[0] === 0x0d)) {
        if (this.#buffer[0] === 0x0a) this.heartbeats++
        this.#buffer = this.#buffer.subarray(1)
      }
      const headEnd = this.#buffer.indexOf('\n\n')
      if (headEnd < 0) return
      const [command, ...lines] = this.#buffer.subarray(0, headEnd).toString().split('\n')
      const headers: Record<string, string> = {}
      for (const line of lines) {
        const colon = line.indexOf(':')
        if (!(line.slice(0, colon) in headers)) headers[line.slice(0, colon)] = line.slice(colon + 1)
      }
      const length = headers['content-length'] === undefined ? undefined : Number(headers['content-length'])
      const bodyStart = headEnd + 2
      const nul = length === undefined ? this.#buffer.indexOf(0, bodyStart) : bodyStart + length
      if (nul < 0 || nul >= this.#buffer.length) return
      this.log.push({ command, headers, body: this.#buffer.subarray(bodyStart, nul).toString() })
      this.#buffer = this.#buffer.subarray(nul + 1)
    }
  }
}

/** A frame's bytes as a client would write them (no escaping, no content-length unless given). */
export function frame (command: string, headers: Record<string, string> = {}, body = ''): string {
  return `${command}\n${Object.entries(headers).map(([k, v]) => `${k}:${v}\n`).join('')}\n${body}\0`
}
