// The seal on every cluster RPC message (requests and replies): an
// HMAC-SHA256 keyed by `cluster.cookie` over the cluster name and the message
// text, which carries its sending time. Anyone who can PUBLISH on the Redis
// server can put a message on a node's channel; without the cookie it cannot
// make one that opens, and a sealed message older (or newer) than the window
// is refused, so a captured one cannot be sent again later. Within the window
// the receiver refuses an id it has already seen (ReplayGuard).
import { createHmac, timingSafeEqual } from 'node:crypto'

/** How far a message's sending time may be from the receiver's clock (both ways: clocks of nodes differ). */
export const RPC_WINDOW_MS = 30_000

interface Envelope { body: string, mac: string }

export type Opened<T> = { ok: true, message: T & { ts: number } } | { ok: false, why: string }

export class RpcSeal {
  constructor (
    private readonly cookie: string,
    private readonly cluster: string,
    private readonly now: () => number = Date.now,
    readonly windowMs = RPC_WINDOW_MS
  ) {}

  /** The message, stamped with the time now, sealed. */
  seal (message: object): string {
    const body = JSON.stringify({ ...message, ts: this.now() })
    return JSON.stringify({ body, mac: this.#mac(body) } satisfies Envelope)
  }

  /** The message of a sealed text, or why it is refused (not sealed, wrong cookie, altered, out of the window). */
  open<T extends object> (text: string): Opened<T> {
    let envelope: Partial<Envelope>
    try {
      envelope = JSON.parse(text) as Partial<Envelope>
    } catch {
      return { ok: false, why: 'not JSON' }
    }
    if (typeof envelope?.body !== 'string' || typeof envelope.mac !== 'string') return { ok: false, why: 'not sealed' }
    const expected = Buffer.from(this.#mac(envelope.body), 'hex')
    const given = Buffer.from(envelope.mac, 'hex')
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, why: 'bad seal (another cookie, or altered)' }
    const message = JSON.parse(envelope.body) as T & { ts: unknown }
    if (typeof message.ts !== 'number' || Math.abs(this.now() - message.ts) > this.windowMs) return { ok: false, why: 'stale' }
    return { ok: true, message: message as T & { ts: number } }
  }

  #mac (body: string): string {
    return createHmac('sha256', this.cookie).update(this.cluster).update('\n').update(body).digest('hex')
  }
}

/** The ids of the requests served within the window: a second message with one of them is a replay. */
export class ReplayGuard {
  /** id → sending time, oldest first */
  readonly #seen = new Map<string, number>()

  constructor (private readonly windowMs: number, private readonly now: () => number = Date.now) {}

  /** True the first time `id` is offered; false for a replay. */
  first (id: string, ts: number): boolean {
    const oldest = this.now() - 2 * this.windowMs
    for (const [seen, at] of this.#seen) {
      if (at >= oldest) break
      this.#seen.delete(seen)
    }
    if (this.#seen.has(id)) return false
    this.#seen.set(id, ts)
    return true
  }
}
