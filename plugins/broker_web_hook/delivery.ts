// Posts the queued events to the endpoint: an undici Pool of `pool_size`
// keep-alive connections (TLS with the web.hook.ssl.* files), one worker per
// lane of the queue, each posting its lane's events one after the other.
// A 5xx answer or no answer is retried after a growing pause, at most
// `retry_times` times; then the event is given up (`webhook/failed`). An
// event the full queue cannot take is dropped (`webhook/dropped`). While the
// endpoint does not answer the alarm `broker_web_hook_unavailable` stands
// (BackendGuard: raised by a failed attempt, cleared by an answer to an
// attempt started after it). Nothing here ever makes a hook handler wait.
import { setTimeout as sleep } from 'node:timers/promises'
import { Pool, type Dispatcher } from 'undici'
import { BackendGuard, type Logger, type PluginContext } from '../../lib/plugin-kit/index.js'
import { EventQueue, type Lane, type Pending } from './queue.js'
import type { TlsFiles } from './settings.js'

export interface Counter { inc: (by?: number) => void }

export interface DeliveryOptions {
  url: string
  /** extra request headers (content-type defaults to application/json) */
  headers: Record<string, string>
  tls: TlsFiles & { verify: boolean }
  poolSize: number
  queueSize: number
  queueBytes: number
  /** ms per attempt: connecting, sending, the whole answer */
  timeout: number
  retryTimes: number
  retryInterval: number
  retryBackoff: number
  counters: { sent: Counter, failed: Counter, dropped: Counter }
  alarms: PluginContext<unknown>['alarms']
  logger: Logger
  plugin: string
}

/** An attempt that got no HTTP answer (refused, reset, timed out, TLS refused). */
class NoAnswer extends Error {}

export class Delivery {
  readonly queue: EventQueue
  readonly #options: DeliveryOptions
  readonly #pool: Pool
  readonly #guard: BackendGuard
  readonly #path: string
  readonly #headers: Record<string, string>
  readonly #stop = new AbortController()
  /** lanes with new events and no worker yet, started together on the next turn of the event loop */
  readonly #waking = new Set<Lane>()
  #wake: NodeJS.Immediate | undefined
  /** drops since the queue last took an event; the first one is logged */
  #dropping = 0

  constructor (options: DeliveryOptions) {
    this.#options = options
    const url = new URL(options.url)
    this.#path = `${url.pathname}${url.search}`
    this.#headers = { 'content-type': 'application/json', ...lowerCased(options.headers) }
    this.queue = new EventQueue(options.poolSize, options.queueSize, options.queueBytes)
    const { ca, cert, key, verify } = options.tls
    this.#pool = new Pool(url.origin, {
      connections: options.poolSize,
      pipelining: 1,
      headersTimeout: options.timeout,
      bodyTimeout: options.timeout,
      connect: { timeout: options.timeout, ca, cert, key, rejectUnauthorized: verify }
    })
    // the guard's own deadline is a backstop: undici's timeouts end an attempt first
    this.#guard = new BackendGuard({ plugin: options.plugin, server: url.origin, timeoutMs: 3 * options.timeout + 1000, alarms: options.alarms, logger: options.logger })
  }

  get closed (): boolean {
    return this.#stop.signal.aborted
  }

  /** Takes an event to post, or drops it (counted) when the queue is full. Never waits. */
  offer (item: Pending): void {
    if (this.closed) return
    const lane = this.queue.push(item)
    if (lane === undefined) {
      this.#options.counters.dropped.inc()
      if (this.#dropping++ === 0) {
        this.#options.logger.warn({ queued: this.queue.count, bytes: this.queue.bytes }, 'web hook queue full: events are dropped until it has room')
      }
      return
    }
    if (this.#dropping > 0) {
      this.#options.logger.info({ dropped: this.#dropping }, 'web hook queue takes events again')
      this.#dropping = 0
    }
    if (lane.busy) return
    lane.busy = true
    this.#waking.add(lane)
    this.#wake ??= setImmediate(() => this.#startWorkers())
  }

  /** Stops posting: waiting events are forgotten, requests under way end, the alarm is cleared. */
  async close (): Promise<void> {
    if (this.closed) return
    this.#stop.abort()
    if (this.#wake !== undefined) clearImmediate(this.#wake)
    const left = this.queue.clear()
    if (left > 0) this.#options.logger.info({ events: left }, 'web hook unloaded: queued events not posted')
    this.#guard.close()
    await this.#pool.destroy()
  }

  #startWorkers (): void {
    this.#wake = undefined
    for (const lane of this.#waking) void this.#work(lane)
    this.#waking.clear()
  }

  async #work (lane: Lane): Promise<void> {
    try {
      for (let item = this.queue.take(lane); item !== undefined && !this.closed; item = this.queue.take(lane)) {
        await this.#post(item)
      }
    } finally {
      lane.busy = false
    }
  }

  async #post (item: Pending): Promise<void> {
    const { counters, logger, retryTimes, retryBackoff } = this.#options
    let body: string
    try {
      body = item.body()
    } catch (err) {
      counters.failed.inc()
      logger.error({ err }, 'web hook event could not be written as JSON')
      return
    }
    let pause = this.#options.retryInterval
    for (let attempt = 0; ; attempt++) {
      const result = await this.#guard.run(async () => await this.#attempt(body))
      if (this.closed) return
      const status = result.ok ? result.value : 0
      if (status >= 200 && status < 300) {
        counters.sent.inc()
        return
      }
      const retryable = !result.ok || status >= 500
      if (!retryable || attempt >= retryTimes) {
        counters.failed.inc()
        const why = result.ok ? { status } : { error: result.error.message }
        logger.warn({ ...why, attempts: attempt + 1 }, 'web hook event not delivered; given up')
        return
      }
      try {
        await sleep(pause, undefined, { signal: this.#stop.signal })
      } catch {
        return
      }
      pause *= retryBackoff
    }
  }

  /** One POST; resolves with the answer's status, rejects (NoAnswer) when there is none. */
  #attempt (body: string): Promise<number> {
    return new Promise((resolve, reject) => {
      let status = 0
      const handler: Dispatcher.DispatchHandler = {
        // undici takes a handler of this (v7) form only when it has onRequestStart
        onRequestStart: () => {},
        onResponseStart: (_controller, statusCode) => { status = statusCode },
        onResponseEnd: () => resolve(status),
        onResponseError: (_controller, error) => reject(new NoAnswer(error.message))
      }
      this.#pool.dispatch({ path: this.#path, method: 'POST', headers: this.#headers, body }, handler)
    })
  }
}

function lowerCased (headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]))
}
