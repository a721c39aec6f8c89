// storage_type = ram: the retained messages in memory only while the plugin
// runs. The store is not written on the way; so that a storage switch (the
// plugin reloads), an unload or a node stop loses nothing, the set is
// written to the store when the load ends, and read back (then removed from
// the store) when a ram load starts. A process that is killed loses them —
// what "memory only" means — and cannot bring back messages cleared since.
import type { Logger, PluginStore, RetainedMessage } from '../../lib/plugin-kit/index.js'
import { encode } from './codec.js'
import { inBatches, readBack, type Limits, type Storage } from './storage.js'

/** writes in flight at once when the set goes to the store */
const WRITE_WIDTH = 256

export class MemoryStorage implements Storage {
  readonly #messages = new Map<string, RetainedMessage>()

  private constructor (private readonly store: PluginStore, private readonly logger: Logger) {}

  /** Takes what the store holds (the set an earlier load wrote) into memory, then empties the store. */
  static async open (store: PluginStore, limits: Limits, logger: Logger): Promise<MemoryStorage> {
    const storage = new MemoryStorage(store, logger)
    for await (const message of readBack(store, limits, logger, Date.now())) {
      storage.#messages.set(message.topic, message)
      await store.del(message.topic)
    }
    return storage
  }

  async recount (): Promise<void> {}

  count (): number {
    return this.#messages.size
  }

  put (message: RetainedMessage, max: number): boolean {
    if (max > 0 && this.#messages.size >= max && !this.#messages.has(message.topic)) return false
    this.#messages.set(message.topic, message)
    return true
  }

  remove (topic: string): void {
    this.#messages.delete(topic)
  }

  get (topic: string): RetainedMessage | undefined {
    return this.#messages.get(topic)
  }

  /** over the map itself (no copy: a SUBSCRIBE to `#` costs no memory); a message removed meanwhile is skipped, as a Map iteration does */
  * scan (accept: (topic: string) => boolean): Generator<RetainedMessage> {
    for (const message of this.#messages.values()) if (accept(message.topic)) yield message
  }

  async sweep (now: number): Promise<number> {
    let expired = 0
    for (const [topic, message] of this.#messages) {
      if (message.expiresAt !== undefined && message.expiresAt <= now) {
        this.#messages.delete(topic)
        expired++
      }
    }
    return expired
  }

  topics (): Iterable<string> {
    return [...this.#messages.keys()]
  }

  async clear (): Promise<number> {
    const n = this.#messages.size
    this.#messages.clear()
    return n
  }

  /** The set goes to the store, for the next load (of any storage type). */
  async close (): Promise<void> {
    const messages = [...this.#messages.values()]
    this.#messages.clear()
    try {
      await inBatches(messages, WRITE_WIDTH, async (message) => await this.store.put(message.topic, encode(message)))
    } catch (err) {
      this.logger.error({ err, messages: messages.length }, 'the retained messages kept in memory could not all be written to the store')
    }
  }
}
