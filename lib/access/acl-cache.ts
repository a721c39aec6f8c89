// A client's cached ACL answers (SPEC §5.3), looked up by action and topic as
// the client wrote them without building a key, so that a check answered from
// the cache allocates nothing. Bounded: past the limit the oldest answer goes.
// Its maps are made at the first answer (a client that never publishes or
// subscribes costs one small object).
import type { AclAccess } from '../hooks/types.js'

export interface CachedAnswer { allow: boolean, expiresAt: number, access: AclAccess, topic: string }

const NONE: ReadonlyMap<string, CachedAnswer> = new Map()

export class AclCache {
  #publish: Map<string, CachedAnswer> | undefined
  #subscribe: Map<string, CachedAnswer> | undefined
  /** every answer, oldest first */
  #age: Set<CachedAnswer> | undefined

  get size (): number {
    return this.#age?.size ?? 0
  }

  get (access: AclAccess, topic: string): CachedAnswer | undefined {
    return this.#byTopic(access).get(topic)
  }

  /** Keeps an answer as the newest; beyond `max` answers the oldest goes. */
  set (access: AclAccess, topic: string, allow: boolean, expiresAt: number, max: number): void {
    this.delete(access, topic)
    const answer: CachedAnswer = { allow, expiresAt, access, topic }
    const byTopic = access === 'publish' ? (this.#publish ??= new Map()) : (this.#subscribe ??= new Map())
    byTopic.set(topic, answer)
    const age = this.#age ??= new Set()
    age.add(answer)
    if (age.size > max) {
      const oldest = age.values().next().value as CachedAnswer
      this.delete(oldest.access, oldest.topic)
    }
  }

  delete (access: AclAccess, topic: string): void {
    const byTopic = access === 'publish' ? this.#publish : this.#subscribe
    const answer = byTopic?.get(topic)
    if (byTopic === undefined || answer === undefined) return
    byTopic.delete(topic)
    this.#age?.delete(answer)
  }

  clear (): void {
    this.#publish = this.#subscribe = this.#age = undefined
  }

  /** `p:<topic>` and `s:<topic>`, oldest first */
  * keys (): IterableIterator<string> {
    for (const answer of this.#age ?? []) yield (answer.access === 'publish' ? 'p:' : 's:') + answer.topic
  }

  #byTopic (access: AclAccess): ReadonlyMap<string, CachedAnswer> {
    return (access === 'publish' ? this.#publish : this.#subscribe) ?? NONE
  }
}
