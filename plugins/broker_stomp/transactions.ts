// A STOMP connection's open transactions: BEGIN opens one, SEND / ACK / NACK
// frames naming it are held until COMMIT hands them back in order (to be
// done then) or ABORT drops them. Bounded per connection: a few open at
// once, a number of frames and of body bytes held, and (as EMQ X) a
// transaction left open for a minute is dropped.
import type { PluginContext, PluginTimer } from '../../lib/plugin-kit/index.js'
import type { StompFrame } from './frame.js'

export const MAX_OPEN = 16
export const MAX_FRAMES = 1000
/** body bytes held by a connection's open transactions, beyond one largest body */
export const MAX_HELD_BYTES = 1024 * 1024
export const TRANSACTION_TIMEOUT_MS = 60_000

interface Transaction { frames: StompFrame[], bytes: number, timer: PluginTimer }

export class Transactions {
  readonly #open = new Map<string, Transaction>()
  #frames = 0
  #bytes = 0

  constructor (private readonly timers: PluginContext<unknown>['timers'], private readonly maxBody: () => number) {}

  /** Opens `id`; an error text when it cannot. */
  begin (id: string): string | undefined {
    if (this.#open.has(id)) return `transaction ${id} is already started`
    if (this.#open.size >= MAX_OPEN) return `more than ${MAX_OPEN} transactions open at once`
    const timer = this.timers.setTimeout(() => this.#drop(id), TRANSACTION_TIMEOUT_MS)
    this.#open.set(id, { frames: [], bytes: 0, timer })
    return undefined
  }

  /** Holds a frame for `id`; an error text when it cannot. */
  add (id: string, frame: StompFrame): string | undefined {
    const transaction = this.#open.get(id)
    if (transaction === undefined) return `transaction ${id} not found`
    if (this.#frames >= MAX_FRAMES) return `more than ${MAX_FRAMES} frames held in transactions`
    if (this.#bytes + frame.body.length > MAX_HELD_BYTES + this.maxBody()) return `more than ${MAX_HELD_BYTES} bytes held in transactions`
    transaction.frames.push(frame)
    transaction.bytes += frame.body.length
    this.#frames++
    this.#bytes += frame.body.length
    return undefined
  }

  /** Closes `id` and gives its frames back in order, or an error text. */
  commit (id: string): StompFrame[] | string {
    const transaction = this.#drop(id)
    return transaction === undefined ? `transaction ${id} not found` : transaction.frames
  }

  /** Drops `id` and its frames; an error text when it is not open. */
  abort (id: string): string | undefined {
    return this.#drop(id) === undefined ? `transaction ${id} not found` : undefined
  }

  clear (): void {
    for (const id of [...this.#open.keys()]) this.#drop(id)
  }

  #drop (id: string): Transaction | undefined {
    const transaction = this.#open.get(id)
    if (transaction === undefined) return undefined
    this.#open.delete(id)
    transaction.timer.cancel()
    this.#frames -= transaction.frames.length
    this.#bytes -= transaction.bytes
    return transaction
  }
}
