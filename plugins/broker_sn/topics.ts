// One MQTT-SN client's topic ids (§6.5, §6.7): normal ids the client
// REGISTERs or the gateway assigns (1 … 65534, at most MAX_TOPICS of them,
// dropped with the connection), the node's predefined ids, and short topic
// names (two octets standing for themselves).
import { shortTopicId, shortTopicName, TOPIC, type TopicIdType } from './codec.js'
import type { Predefined } from './settings.js'

/** normal topic ids one client may hold */
export const MAX_TOPICS = 1000
const LAST_ID = 0xfffe

/** How the gateway names a topic to its client in a PUBLISH. */
export interface TopicRef { topicIdType: TopicIdType, topicId: number }

export class TopicRegistry {
  readonly #byId = new Map<number, string>()
  readonly #byName = new Map<string, number>()
  #next = 1

  constructor (readonly predefined: () => Predefined) {}

  get size (): number {
    return this.#byId.size
  }

  /** The id of a topic name, registered now when new; undefined when the client holds MAX_TOPICS already. */
  register (name: string): number | undefined {
    const known = this.#byName.get(name)
    if (known !== undefined) return known
    if (this.#byId.size >= MAX_TOPICS) return undefined
    while (this.#byId.has(this.#next)) this.#next = this.#next >= LAST_ID ? 1 : this.#next + 1
    const id = this.#next
    this.#next = id >= LAST_ID ? 1 : id + 1
    this.#byId.set(id, name)
    this.#byName.set(name, id)
    return id
  }

  /** The topic name a PUBLISH (or a SUBSCRIBE's id) stands for; undefined: no such id. */
  lookup (topicIdType: TopicIdType, topicId: number): string | undefined {
    switch (topicIdType) {
      case TOPIC.NORMAL: return this.#byId.get(topicId)
      case TOPIC.PREDEFINED: return this.predefined().byId.get(topicId)
      case TOPIC.SHORT: return shortTopicName(topicId)
      default: return undefined
    }
  }

  /** How to name `topic` to the client without a REGISTER: predefined, registered, short; undefined: it must be registered first. */
  reference (topic: string): TopicRef | undefined {
    const predefined = this.predefined().byName.get(topic)
    if (predefined !== undefined) return { topicIdType: TOPIC.PREDEFINED, topicId: predefined }
    const normal = this.#byName.get(topic)
    if (normal !== undefined) return { topicIdType: TOPIC.NORMAL, topicId: normal }
    const short = shortTopicId(topic)
    if (short !== undefined) return { topicIdType: TOPIC.SHORT, topicId: short }
    return undefined
  }

  /** Drops a normal id (the client refused or lost it). */
  forget (name: string): void {
    const id = this.#byName.get(name)
    if (id === undefined) return
    this.#byName.delete(name)
    this.#byId.delete(id)
  }

  clear (): void {
    this.#byId.clear()
    this.#byName.clear()
    this.#next = 1
  }
}
