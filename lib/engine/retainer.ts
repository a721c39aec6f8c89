// Retained-message limits (SPEC §8 retainer.*), applied where Aedes stores a
// retained message: payloads over `retainer.max_payload_size` and new topics
// beyond `retainer.max_retained_messages` are published but not retained, and
// `retainer.expiry_interval` gives each stored message an expiry time that
// Aedes honours when it delivers retained messages. `topics` holds the
// clients' retained topics; the node's own `$SYS/` ones are not counted.
import type { Config } from '../config/store.js'
import type { AedesPersistence, RetainedPacket } from './store.js'

export class Retainer {
  readonly topics = new Set<string>()
  dropped = 0

  constructor (private readonly config: Config) {}

  /** Loads the topics already stored, then wraps `persistence.storeRetained`. */
  async attach (persistence: AedesPersistence): Promise<void> {
    for await (const packet of persistence.createRetainedStream('#') as AsyncIterable<RetainedPacket>) {
      if (!packet.topic.startsWith('$SYS/')) this.topics.add(packet.topic)
    }
    const store = persistence.storeRetained.bind(persistence)
    persistence.storeRetained = async (packet) => {
      const stored = this.#admit(packet)
      if (stored) await store(stored)
    }
  }

  /** Returns what to store (possibly with an expiry), or undefined to keep the message unretained. */
  #admit (packet: RetainedPacket): RetainedPacket | undefined {
    // the node's own $SYS notices are kept apart from the clients' limits
    if (packet.topic.startsWith('$SYS/')) return packet
    if (packet.payload.length === 0) {
      this.topics.delete(packet.topic)
      return packet
    }
    const maxPayload = this.config.get('retainer.max_payload_size')
    const maxCount = this.config.get('retainer.max_retained_messages')
    if ((maxPayload > 0 && packet.payload.length > maxPayload) ||
        (maxCount > 0 && this.topics.size >= maxCount && !this.topics.has(packet.topic))) {
      this.dropped++
      return undefined
    }
    this.topics.add(packet.topic)
    const expiry = this.config.get('retainer.expiry_interval')
    if (expiry === 0) return packet
    const deadline = Date.now() + expiry
    return { ...packet, messageExpiry: Math.min(packet.messageExpiry ?? deadline, deadline) }
  }
}
