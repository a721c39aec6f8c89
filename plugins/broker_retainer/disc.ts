// storage_type = disc: every retained message in the plugin's store (the
// node's embedded LevelDB), with an index in memory of the topics and their
// expiry: a SUBSCRIBE is matched against the index and reads from the store
// only the messages it gets; counting and limits need no store read. A
// message is acknowledged to its publisher once the store has it.
import type { Logger, PluginStore, RetainedMessage } from '../../lib/plugin-kit/index.js'
import { decode, encode } from './codec.js'
import { readBack, type Limits, type Storage } from './storage.js'

/** In the index: when the message expires (ms since the epoch), 0 for never. */
type Expiry = number

export class DiscStorage implements Storage {
  readonly #index = new Map<string, Expiry>()

  private constructor (private readonly store: PluginStore, private readonly logger: Logger) {}

  static async open (store: PluginStore, limits: Limits, logger: Logger): Promise<DiscStorage> {
    const storage = new DiscStorage(store, logger)
    for await (const message of readBack(store, limits, logger, Date.now())) storage.#index.set(message.topic, message.expiresAt ?? 0)
    return storage
  }

  async recount (): Promise<void> {}

  count (): number {
    return this.#index.size
  }

  async put (message: RetainedMessage, max: number): Promise<boolean> {
    const { topic } = message
    // decided (and the index set) before the write, so concurrent publishes see the count
    if (max > 0 && this.#index.size >= max && !this.#index.has(topic)) return false
    this.#index.set(topic, message.expiresAt ?? 0)
    try {
      await this.store.put(topic, encode(message))
    } catch (err) {
      this.#index.delete(topic)
      throw err
    }
    return true
  }

  async remove (topic: string): Promise<void> {
    this.#index.delete(topic)
    await this.store.del(topic)
  }

  async get (topic: string): Promise<RetainedMessage | undefined> {
    if (!this.#index.has(topic)) return undefined
    const text = await this.store.get(topic)
    if (text === undefined) return undefined
    const message = decode(topic, text)
    if (typeof message !== 'string') return message
    this.logger.warn({ topic, why: message }, 'a stored retained message is malformed: skipped and removed')
    await this.remove(topic)
    return undefined
  }

  async * scan (accept: (topic: string) => boolean): AsyncGenerator<RetainedMessage> {
    for (const topic of this.#index.keys()) {
      if (!accept(topic)) continue
      const message = await this.get(topic)
      if (message !== undefined) yield message
    }
  }

  async sweep (now: number): Promise<number> {
    const expired = [...this.#index].filter(([, expiry]) => expiry !== 0 && expiry <= now).map(([topic]) => topic)
    for (const topic of expired) await this.remove(topic)
    return expired.length
  }

  topics (): Iterable<string> {
    return [...this.#index.keys()]
  }

  async clear (): Promise<number> {
    const topics = [...this.#index.keys()]
    for (const topic of topics) await this.remove(topic)
    return topics.length
  }

  async close (): Promise<void> {
    this.#index.clear()
  }
}
