// Graceful drain: the listeners stop accepting (their ports close, so a new
// connection is refused by the kernel), then the connected clients are
// disconnected at `rate` per second — MQTT 5 with DISCONNECT 0x9D Server
// Moved (and a Server Reference when there is another node to go to), 3.x by
// closing the connection. Sessions are left as any disconnect leaves them:
// persistent ones stay stored. A client that finishes connecting during the
// drain (its socket was accepted before) is disconnected at once. One-way: a
// drained node is left by stopping it.
import type { Aedes, Client } from 'aedes'
import { engineClients } from '../engine/internals.js'
import { noteDisconnectReason } from '../hooks/engine-events.js'
import type { Listener } from '../listeners/index.js'
import type { Logger } from '../log.js'
import { specTime } from '../timestamps.js'
import type { NodeLifecycle } from '../node-state.js'

const MQTT5_SERVER_MOVED = 0x9D
/** below this, the rate's clients are spread over ticks of 1000/rate ms; above, batched every TICK_MS */
const TICK_MS = 50

export interface DrainStatus {
  /** `idle`: never drained; `draining`: clients left to disconnect; `drained`: none left */
  state: 'idle' | 'draining' | 'drained'
  rate: number
  /** clients connected when the drain began */
  total: number
  disconnected: number
  remaining: number
  started_at: string | null
  finished_at: string | null
}

export interface DrainParts {
  engine: Aedes
  lifecycle: NodeLifecycle
  listeners: () => Listener[]
  logger: Logger
  /**
   * The Server Reference MQTT 5 clients are given (another node's address),
   * or undefined when there is none (a single node). The cluster fills it in;
   * it is asked once, when the drain starts.
   */
  serverReference: () => Promise<string | undefined>
}

export class Drain {
  #status: DrainStatus = { state: 'idle', rate: 0, total: 0, disconnected: 0, remaining: 0, started_at: null, finished_at: null }
  #timer: NodeJS.Timeout | null = null
  #done: Promise<void> = Promise.resolve()
  #finish: () => void = () => {}
  readonly #leaving = new WeakSet<Client>()
  #reference: string | undefined

  constructor (private readonly parts: DrainParts) {
    parts.engine.on('clientReady', (client: Client) => {
      if (this.#status.state !== 'idle' && parts.lifecycle.state === 'draining') this.#disconnect(client)
    })
    parts.lifecycle.onChange((state) => { if (state === 'stopping' || state === 'stopped') this.#stopTimer() })
  }

  status (): DrainStatus {
    return { ...this.#status, remaining: this.#connected().length }
  }

  /** Resolves when every client is disconnected (or the node stops first). */
  async done (): Promise<void> {
    await this.#done
  }

  /**
   * Closes the listeners and starts disconnecting; answers at once (the
   * disconnects go on at `rate`). A second call answers the status and
   * changes nothing.
   */
  start (rate: number): DrainStatus {
    const { lifecycle, listeners, logger } = this.parts
    if (lifecycle.state !== 'running') return this.status()
    lifecycle.set('draining')
    const connected = this.#connected()
    this.#status = { state: 'draining', rate, total: connected.length, disconnected: 0, remaining: connected.length, started_at: specTime(), finished_at: null }
    this.#done = new Promise((resolve) => { this.#finish = resolve })
    logger.warn({ clients: connected.length, rate }, 'draining: listeners closed, disconnecting clients')
    // a listener stops accepting at once; its stop() resolves only when its last connection is gone
    for (const listener of listeners()) listener.stop().catch((err: Error) => logger.error({ err, listener: listener.protocol }, 'listener did not close'))
    const interval = Math.max(TICK_MS, 1000 / rate)
    const perTick = Math.max(1, Math.round(rate * interval / 1000))
    const tick = (): void => {
      for (const client of this.#connected().slice(0, perTick)) this.#disconnect(client)
      if (this.#connected().length === 0) return this.#drained()
      this.#timer = setTimeout(tick, interval)
    }
    // the first disconnects wait for the reference (one Redis read), so that they carry it too
    this.parts.serverReference().catch(() => undefined).then((reference) => {
      this.#reference = reference
      if (lifecycle.state === 'draining') tick()
    }).catch((err: Error) => logger.error({ err }, 'drain stopped'))
    return this.status()
  }

  #connected (): Client[] {
    return engineClients(this.parts.engine).filter((c) => c.connected && !c.closed && !this.#leaving.has(c))
  }

  #disconnect (client: Client): void {
    this.#leaving.add(client)
    this.#status.disconnected++
    noteDisconnectReason(client, 'server_moved')
    const reference = this.#reference
    client.disconnect({ reasonCode: MQTT5_SERVER_MOVED, ...(reference === undefined ? {} : { properties: { serverReference: reference } }) })
  }

  #drained (): void {
    this.#timer = null
    this.#status.state = 'drained'
    this.#status.finished_at = specTime()
    this.parts.logger.warn({ disconnected: this.#status.disconnected }, 'drained: no client left')
    this.#finish()
  }

  #stopTimer (): void {
    if (this.#timer !== null) clearTimeout(this.#timer)
    this.#timer = null
    this.#finish()
  }
}
