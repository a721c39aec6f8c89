// The broker under fuzz: a real `bin/broker` process (so a crash is an exit
// and the memory is the process's own) with TCP and WebSocket listeners and,
// for the API fuzzer, broker_management. `check()` is the verdict after a
// batch: alive, answers a fresh client, resident memory under the bound.
import { readFileSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { connect as netConnect } from 'node:net'
import WebSocket from 'ws'
import { freePort, spawnBroker, tempDir, writePluginFiles, type BrokerProcess } from '../test/helpers/broker.js'
import type { Connection } from './mqtt-cases.js'
import { validConnect } from './mqtt-packets.js'

/** How long a fresh client may wait for its CONNACK before the broker counts as hung (the CI box is loaded). */
const PROBE_DEADLINE_MS = 15_000
/** A connection is over when the broker closed it, or said nothing for this long after the last write. */
const QUIET_MS = 150
const CASE_DEADLINE_MS = 3_000
/** log lines kept for the crash signature */
const KEEP_LINES = 400

export type Verdict = { ok: true, rssMiB: number } | { ok: false, what: 'crash' | 'hang' | 'rss', detail: string, signature: string }

export interface TargetOptions {
  /** load broker_management on a free port */
  api?: boolean
  rssLimitMiB: number
}

export class Target {
  #probes = 0
  private constructor (readonly broker: BrokerProcess, readonly dataDir: string, readonly wsPort: number, readonly apiPort: number | undefined, readonly options: TargetOptions) {}

  static async start (options: TargetOptions): Promise<Target> {
    const dataDir = await tempDir('broker-fuzz-')
    const wsPort = await freePort()
    const apiPort = options.api === true ? await freePort() : undefined
    const plugins: Record<string, Record<string, string>> = {
      // as a new install: retained PUBLISHes are kept (and read back on SUBSCRIBE) by the retainer
      broker_retainer: {},
      ...(apiPort === undefined ? {} : {
        // the fuzzer sends wrong credentials on purpose: with the failed-login limit on, its own checks would be
        // refused 429 once the budget is spent (test/44 holds the limit itself)
        broker_management: { 'management.listener.http': `127.0.0.1:${apiPort}`, 'management.login_rate': '0' }
      })
    }
    const etcDir = await writePluginFiles(dataDir, plugins)
    const broker = await spawnBroker(dataDir, { 'listener.ws.external': `127.0.0.1:${wsPort}`, 'plugins.etc_dir': etcDir, 'log.console.level': 'info' })
    return new Target(broker, dataDir, wsPort, apiPort, options)
  }

  get port (): number { return this.broker.port }
  get alive (): boolean { return this.broker.child.exitCode === null && this.broker.child.signalCode === null }
  get apiUrl (): string { return `http://127.0.0.1:${this.apiPort}` }

  /** VmRSS of the process, in MiB. */
  rssMiB (): number {
    const status = readFileSync(`/proc/${this.broker.child.pid}/status`, 'utf8')
    return Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0) / 1024
  }

  /** Writes one case's connection and waits until the broker closes it or falls quiet. */
  async send (connection: Connection): Promise<void> {
    if (connection.transport === 'tcp') await sendTcp(this.port, connection.chunks)
    else await sendWs(this.wsPort, connection.chunks)
    this.#trimLines()
  }

  /** Alive, answers a fresh client with a CONNACK, resident memory under the bound. */
  async check (): Promise<Verdict> {
    if (!this.alive) return this.#crashed()
    const answered = await probe(this.port, `fuzz-probe-${++this.#probes}`)
    // a refused or closed probe may be the process dying: give its exit a moment to arrive
    if (!answered) await Promise.race([this.broker.exited, new Promise((resolve) => setTimeout(resolve, 3000))])
    if (!this.alive) return this.#crashed()
    if (!answered) return { ok: false, what: 'hang', detail: `no CONNACK within ${PROBE_DEADLINE_MS} ms`, signature: 'hang: no CONNACK to a fresh client' }
    const rssMiB = this.rssMiB()
    if (rssMiB > this.options.rssLimitMiB) return { ok: false, what: 'rss', detail: `RSS ${rssMiB.toFixed(0)} MiB > ${this.options.rssLimitMiB} MiB`, signature: 'rss: over the bound' }
    return { ok: true, rssMiB }
  }

  async stop (): Promise<void> {
    if (this.alive) {
      this.broker.child.kill('SIGKILL')
      await this.broker.exited
    }
    await rm(this.dataDir, { recursive: true, force: true })
  }

  #crashed (): Verdict {
    const detail = this.broker.lines.slice(-40).join('\n')
    return { ok: false, what: 'crash', detail, signature: crashSignature(this.broker.lines) }
  }

  #trimLines (): void {
    const lines = this.broker.lines
    if (lines.length > KEEP_LINES * 2) lines.splice(0, lines.length - KEEP_LINES)
  }
}

/** What makes one crash the same as another: the error line and the first frame, without paths or line numbers. */
export function crashSignature (lines: string[]): string {
  const at = lines.findIndex((l) => /^\s*\w*(Error|Exception)\b|^Error|^\w+: .*/.test(l) && !l.startsWith('{'))
  if (at < 0) return 'crash: exited'
  const message = lines[at].trim().replace(/\d+/g, 'N')
  const frame = lines.slice(at + 1).find((l) => /^\s+at /.test(l))?.trim().replace(/\(?(?:file:\/\/)?[^ ()]*\/([^/ ():]+):\d+:\d+\)?$/, '($1)') ?? ''
  return `crash: ${message} ${frame}`.slice(0, 300)
}

async function probe (port: number, clientId: string): Promise<boolean> {
  return await new Promise((resolve) => {
    const socket = netConnect(port, '127.0.0.1')
    const done = (answer: boolean): void => { clearTimeout(timer); socket.destroy(); resolve(answer) }
    const timer = setTimeout(() => done(false), PROBE_DEADLINE_MS)
    socket.on('connect', () => socket.write(validConnect(4, clientId)))
    // CONNACK: type 2, whatever the return code (a refusal is an answer too)
    socket.on('data', (data) => done(data[0] === 0x20))
    socket.on('error', () => done(false))
    socket.on('close', () => done(false))
  })
}

/** Resolves when the peer closed, or after QUIET_MS without data after the last write, or at the case deadline. */
function quietOrClosed (onData: (listener: () => void) => void, onClose: (listener: () => void) => void, end: () => void): { wrote: () => void, done: Promise<void> } {
  let quiet: NodeJS.Timeout | undefined
  let finish: () => void = () => {}
  const done = new Promise<void>((resolve) => { finish = resolve })
  const deadline = setTimeout(() => stop(), CASE_DEADLINE_MS)
  const stop = (): void => { clearTimeout(quiet); clearTimeout(deadline); end(); finish() }
  const rearm = (): void => { clearTimeout(quiet); quiet = setTimeout(stop, QUIET_MS) }
  onData(rearm)
  onClose(stop)
  return { wrote: rearm, done }
}

async function sendTcp (port: number, chunks: Buffer[]): Promise<void> {
  const socket = netConnect(port, '127.0.0.1')
  socket.on('error', () => {})
  const { wrote, done } = quietOrClosed((l) => socket.on('data', l), (l) => socket.on('close', l), () => socket.destroy())
  socket.once('connect', () => {
    for (const chunk of chunks) if (!socket.destroyed) socket.write(chunk)
    wrote()
  })
  await done
}

async function sendWs (port: number, chunks: Buffer[]): Promise<void> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/mqtt`, ['mqtt'])
  ws.on('error', () => {})
  const { wrote, done } = quietOrClosed((l) => ws.on('message', l), (l) => ws.on('close', l), () => ws.terminate())
  ws.once('open', () => {
    for (const chunk of chunks) if (ws.readyState === WebSocket.OPEN) ws.send(chunk)
    wrote()
  })
  await done
}
