// Where the engine's retained messages go. Aedes stores a retained PUBLISH
// with `persistence.storeRetained` and reads them on SUBSCRIBE with
// `persistence.createRetainedStreamCombi`; both are wrapped here:
// - the node's own `$SYS/` notices stay in the engine's store, as before;
// - every other retained message goes to the plugin that provides the
//   `retained` capability (broker_retainer), or nowhere when none is loaded:
//   the retain flag is then ignored (delivered, not stored), as in EMQ X.
// Retained messages an older install kept in the engine's store are handed to
// the keeper when it is provided, then removed there.
import { Readable } from 'node:stream'
import type { Logger } from '../log.js'
import type { RetainedMessage, RetainedSlot, RetainedStore } from '../plugin-kit/contract.js'
import type { AedesPersistence, RetainedPacket } from './store.js'

const SYS = '$SYS/'
/** the MQTT 5 properties a retained message keeps (not Topic Alias, Subscription Identifier or the expiry, which is `expiresAt`) */
const KEPT_PROPERTIES = ['payloadFormatIndicator', 'contentType', 'responseTopic', 'correlationData', 'userProperties'] as const

interface CombiPersistence extends AedesPersistence {
  createRetainedStreamCombi: (patterns: string[]) => NodeJS.ReadableStream
}

/** A filter whose first level is `$SYS`: only those can match the node's own notices. */
const sysFilter = (filter: string): boolean => filter === '$SYS' || filter.startsWith(SYS)

/** The message the keeper sees: topic, payload, QoS, the properties a retained message keeps, its expiry. */
export function retainedMessage (packet: RetainedPacket): RetainedMessage {
  const qos = packet.qos === 1 || packet.qos === 2 ? packet.qos : 0
  const message: RetainedMessage = { topic: packet.topic, payload: packet.payload, qos }
  const properties = packet.properties as Record<string, unknown> | undefined
  if (properties !== undefined) {
    const kept = Object.fromEntries(KEPT_PROPERTIES.filter((name) => properties[name] !== undefined).map((name) => [name, properties[name]]))
    if (Object.keys(kept).length > 0) message.properties = kept
  }
  if (typeof packet.messageExpiry === 'number') message.expiresAt = packet.messageExpiry
  return message
}

/** The packet Aedes delivers on SUBSCRIBE (it computes the remaining Message Expiry Interval from `messageExpiry`). */
function retainedPacket (message: RetainedMessage): RetainedPacket {
  const packet: RetainedPacket = { cmd: 'publish', topic: message.topic, payload: message.payload, qos: message.qos, retain: true, dup: false }
  if (message.properties !== undefined) packet.properties = { ...message.properties }
  if (message.expiresAt !== undefined) packet.messageExpiry = message.expiresAt
  return packet
}

export class RetainedMessages {
  #keeper: { owner: string, store: RetainedStore } | undefined
  /** the engine store's own storeRetained (the node's `$SYS/` notices, and clearing what was handed over) */
  #own: ((packet: RetainedPacket) => Promise<void>) | undefined
  /** a client's retained message was kept (true) or cleared (false); set by observability */
  onChange: ((stored: boolean) => void) | undefined

  constructor (private readonly persistence: AedesPersistence, readonly shared: boolean, private readonly logger: Logger) {}

  /** How many the keeper holds (the node's own `$SYS/` ones are not counted); 0 without one. */
  count (): number {
    try {
      return this.#keeper?.store.count() ?? 0
    } catch (err) {
      this.logger.error({ err, plugin: this.#keeper?.owner }, 'the retained message count failed')
      return 0
    }
  }

  /** Who keeps the retained messages, if a plugin does. */
  get keeper (): string | undefined {
    return this.#keeper?.owner
  }

  /** Routes the engine's retained-message calls through here. */
  attach (): void {
    const persistence = this.persistence as CombiPersistence
    const own = persistence.storeRetained.bind(persistence)
    this.#own = own
    const ownCombi = persistence.createRetainedStreamCombi.bind(persistence)
    persistence.storeRetained = async (packet) => {
      if (packet.topic.startsWith(SYS)) return await own(packet)
      await this.#store(packet)
    }
    persistence.createRetainedStreamCombi = (patterns) => {
      const sys = patterns.filter(sysFilter)
      const others = patterns.filter((p) => !sysFilter(p))
      const keeper = this.#keeper
      if (keeper === undefined || others.length === 0) return sys.length > 0 ? ownCombi(sys) : Readable.from([])
      const matched = this.#matched(keeper, others)
      return Readable.from(sys.length > 0 ? concat(ownCombi(sys) as AsyncIterable<RetainedPacket>, matched) : matched)
    }
  }

  /** The `retained` capability of one plugin load; `release` is pushed on its release stack. */
  slot (owner: string, onRelease: (release: () => void) => void): RetainedSlot {
    return {
      shared: this.shared,
      provide: async (store) => {
        if (this.#keeper !== undefined) throw new Error(`the retained messages are kept by ${this.#keeper.owner} already`)
        const keeper = { owner, store }
        this.#keeper = keeper
        onRelease(() => {
          if (this.#keeper === keeper) this.#keeper = undefined
        })
        await this.#handOver(keeper)
      }
    }
  }

  async #store (packet: RetainedPacket): Promise<void> {
    const keeper = this.#keeper
    if (keeper === undefined) return
    const clearing = packet.payload.length === 0
    try {
      const kept = await keeper.store.store(retainedMessage(packet))
      if (kept) this.onChange?.(!clearing)
    } catch (err) {
      this.logger.error({ err, plugin: keeper.owner, topic: packet.topic }, 'retained message not stored')
    }
  }

  /** The keeper's answer as packets; a keeper that fails ends the stream (logged), never the subscriber's connection. */
  async * #matched (keeper: { owner: string, store: RetainedStore }, filters: string[]): AsyncGenerator<RetainedPacket> {
    try {
      for await (const message of keeper.store.match(filters)) yield retainedPacket(message)
    } catch (err) {
      this.logger.error({ err, plugin: keeper.owner, filters }, 'retained messages not read')
    }
  }

  /**
   * After the plugins booted: clients' retained messages an install before
   * the plugin left in the engine's store, with no plugin to take them
   * (an older data/loaded_plugins without broker_retainer), are logged, so
   * the operator knows what loading it would serve again.
   */
  async warnUnkept (): Promise<void> {
    if (this.#keeper !== undefined) return
    let left = 0
    for await (const packet of this.persistence.createRetainedStream('#') as AsyncIterable<RetainedPacket>) {
      if (!packet.topic.startsWith(SYS)) left++
    }
    if (left > 0) this.logger.warn({ retained: left }, 'retained messages of an earlier install wait in the store and no plugin keeps retained messages: load broker_retainer (broker_ctl plugins load broker_retainer) to serve them')
  }

  /** Clients' retained messages left in the engine's store by an install before the plugin: to the keeper, then out of the engine's store. */
  async #handOver (keeper: { owner: string, store: RetainedStore }): Promise<void> {
    let moved = 0
    for await (const packet of this.persistence.createRetainedStream('#') as AsyncIterable<RetainedPacket>) {
      if (packet.topic.startsWith(SYS) || packet.payload.length === 0) continue
      try {
        await keeper.store.store(retainedMessage(packet))
      } catch (err) {
        this.logger.error({ err, plugin: keeper.owner, topic: packet.topic }, 'a retained message of the engine store not handed over; it stays there')
        continue
      }
      await (this.#own ?? this.persistence.storeRetained.bind(this.persistence))({ topic: packet.topic, payload: Buffer.alloc(0) })
      moved++
    }
    if (moved > 0) this.logger.info({ plugin: keeper.owner, moved }, 'retained messages of the engine store handed to the plugin')
  }
}

async function * concat<T> (...sources: Array<AsyncIterable<T>>): AsyncGenerator<T> {
  for (const source of sources) yield * source
}
