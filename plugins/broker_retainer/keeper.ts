// The retained messages as the node sees them (the `retained` capability's
// RetainedStore) over one storage: the limits a retained PUBLISH meets, the
// expiry it is given, and what a SUBSCRIBE gets.
//
// - An empty payload clears the topic. A payload over
//   retainer.max_payload_size, or a new topic when
//   retainer.max_retained_messages are kept, is delivered but not retained.
// - Expiry: the publisher's MQTT 5 Message Expiry Interval when it set one,
//   else retainer.expiry_interval (0: never), as EMQ X. An expired message is
//   never delivered; it is removed when a SUBSCRIBE meets it, and by the
//   periodic sweep.
import type { Logger, RetainedMessage, RetainedStore } from '../../lib/plugin-kit/index.js'
import { Filters, validFilter } from './filters.js'
import type { Maybe, Storage } from './storage.js'

export interface KeeperSettings {
  'retainer.max_payload_size': number
  'retainer.max_retained_messages': number
  'retainer.expiry_interval': number
}

/** A refusal is logged at most this often (with how many there were since), so a flood cannot flood the log. */
const REFUSAL_LOG_MS = 60_000

export class Keeper implements RetainedStore {
  /** refusals since the last one logged */
  #refused = { too_large: 0, full: 0 }
  #refusalLogged = 0

  constructor (readonly storage: Storage, private readonly settings: () => KeeperSettings, private readonly logger: Logger) {}

  store (message: RetainedMessage): Maybe<boolean> {
    if (message.payload.length === 0) return then(this.storage.remove(message.topic), () => true)
    const settings = this.settings()
    const maxPayload = settings['retainer.max_payload_size']
    if (maxPayload > 0 && message.payload.length > maxPayload) return this.#refuse('too_large', message.topic)
    const interval = settings['retainer.expiry_interval']
    const kept = message.expiresAt === undefined && interval > 0 ? { ...message, expiresAt: Date.now() + interval } : message
    return then(this.storage.put(kept, settings['retainer.max_retained_messages']), (stored) => stored || this.#refuse('full', message.topic))
  }

  async * match (filters: readonly string[]): AsyncGenerator<RetainedMessage> {
    const wanted = new Filters(filters)
    if (wanted.literal) {
      for (const topic of wanted.topics) {
        const message = await this.storage.get(topic)
        if (message !== undefined && await this.#live(message)) yield message
      }
      return
    }
    for await (const message of this.storage.scan((topic) => wanted.count(topic) > 0)) {
      if (!await this.#live(message)) continue
      for (let n = wanted.count(message.topic); n > 0; n--) yield message
    }
  }

  count (): number {
    return this.storage.count()
  }

  /** Removes the retained messages whose topic matches `filter`, or all; answers how many. */
  async clean (filter?: string): Promise<number> {
    if (filter === undefined) return await this.storage.clear()
    if (!validFilter(filter)) throw new Error(`${JSON.stringify(filter)} is not a topic filter`)
    const matching = new Filters([filter])
    const topics: string[] = []
    for await (const message of this.storage.scan((topic) => matching.count(topic) > 0)) topics.push(message.topic)
    for (const topic of topics) await this.storage.remove(topic)
    return topics.length
  }

  async sweep (): Promise<number> {
    return await this.storage.sweep(Date.now())
  }

  /** false (and removed) when it has expired */
  async #live (message: RetainedMessage): Promise<boolean> {
    if (message.expiresAt === undefined || message.expiresAt > Date.now()) return true
    await this.storage.remove(message.topic)
    return false
  }

  #refuse (why: 'too_large' | 'full', topic: string): false {
    this.#refused[why]++
    const now = Date.now()
    if (now - this.#refusalLogged >= REFUSAL_LOG_MS) {
      this.#refusalLogged = now
      this.logger.warn({ topic, ...this.#refused }, 'retained messages delivered but not retained: over retainer.max_payload_size (too_large) or retainer.max_retained_messages (full)')
      this.#refused = { too_large: 0, full: 0 }
    }
    return false
  }
}

/** `next(value)`, without a promise when `value` is not one (ram answers a PUBLISH synchronously). */
function then<T, U> (value: Maybe<T>, next: (value: T) => U): Maybe<U> {
  return value instanceof Promise ? value.then(next) : next(value)
}
