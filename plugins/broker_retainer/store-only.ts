// storage_type = disc_only, and every storage type in a cluster: the
// retained messages only in the plugin's store, nothing of them in memory
// but their number. A SUBSCRIBE with wildcard filters reads the store once
// (a topic name filter reads its one key). Writes go one at a time, so the
// count and the max_retained_messages check stay exact.
//
// In a cluster the store is the cluster's (a Redis hash every node reads and
// writes): the count is asked of the store (HLEN) for each limit check and
// after each write, since other nodes change it too.
import type { Logger, PluginStore, RetainedMessage } from '../../lib/plugin-kit/index.js'
import { decode, encode } from './codec.js'
import { readBack, type Limits, type Storage } from './storage.js'

export class StoreOnlyStorage implements Storage {
  #count = 0
  /** a message with an expiry may be in the store: sweeps read it only then */
  #maybeExpiring = false
  /** writes, one at a time */
  #queue: Promise<unknown> = Promise.resolve()

  private constructor (private readonly store: PluginStore, private readonly shared: boolean, private readonly logger: Logger) {}

  static async open (store: PluginStore, shared: boolean, limits: Limits, logger: Logger): Promise<StoreOnlyStorage> {
    const storage = new StoreOnlyStorage(store, shared, logger)
    for await (const message of readBack(store, limits, logger, Date.now())) {
      storage.#count++
      if (message.expiresAt !== undefined) storage.#maybeExpiring = true
    }
    await storage.recount()
    return storage
  }

  count (): number {
    return this.#count
  }

  async put (message: RetainedMessage, max: number): Promise<boolean> {
    return await this.#serial(async () => {
      const isNew = await this.store.get(message.topic) === undefined
      if (isNew && max > 0) {
        await this.recount()
        if (this.#count >= max) return false
      }
      await this.store.put(message.topic, encode(message))
      if (message.expiresAt !== undefined) this.#maybeExpiring = true
      if (isNew) this.#count++
      await this.recount()
      return true
    })
  }

  async remove (topic: string): Promise<void> {
    await this.#serial(async () => {
      const existed = await this.store.get(topic) !== undefined
      await this.store.del(topic)
      if (existed) this.#count = Math.max(0, this.#count - 1)
      await this.recount()
    })
  }

  async get (topic: string): Promise<RetainedMessage | undefined> {
    const text = await this.store.get(topic)
    return text === undefined ? undefined : await this.#decoded(topic, text)
  }

  async * scan (accept: (topic: string) => boolean): AsyncGenerator<RetainedMessage> {
    for await (const [topic, text] of this.store.entries()) {
      if (!accept(topic)) continue
      const message = await this.#decoded(topic, text)
      if (message !== undefined) yield message
    }
  }

  async sweep (now: number): Promise<number> {
    if (!this.#maybeExpiring) return 0
    let expired = 0
    let expiring = false
    for await (const message of this.scan(() => true)) {
      if (message.expiresAt === undefined) continue
      if (message.expiresAt <= now) {
        await this.remove(message.topic)
        expired++
      } else expiring = true
    }
    this.#maybeExpiring = expiring
    return expired
  }

  async * topics (): AsyncGenerator<string> {
    for await (const [topic] of this.store.entries()) yield topic
  }

  async clear (): Promise<number> {
    let n = 0
    for await (const topic of this.topics()) {
      await this.remove(topic)
      n++
    }
    return n
  }

  async close (): Promise<void> {}

  /** In a cluster, the store's own count (other nodes write to it too). */
  async recount (): Promise<void> {
    if (this.shared && this.store.size !== undefined) this.#count = await this.store.size()
  }

  async #decoded (topic: string, text: string): Promise<RetainedMessage | undefined> {
    const message = decode(topic, text)
    if (typeof message !== 'string') return message
    this.logger.warn({ topic, why: message }, 'a stored retained message is malformed: skipped and removed')
    await this.remove(topic)
    return undefined
  }

  async #serial<T> (write: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(write, write)
    this.#queue = run.catch(() => {})
    return await run
  }
}
