// A client's cached ACL answers (SPEC §5.3), looked up by action and topic as
// the client wrote them without building a key, so that a check answered from
// the cache allocates nothing. Bounded: past the limit the oldest answer goes.
import type { AclAccess } from '../hooks/types.js'

export interface CachedAnswer { allow: boolean, expiresAt: number, access: AclAccess, topic: string }

export class AclCache {
  readonly #publish = new Map<string, CachedAnswer>()
  readonly #subscribe = new Map<string, CachedAnswer>()
  /** every answer, oldest first */
  readonly #age = new Set<CachedAnswer>()

  get size (): number {
    return this.#age.size
  }

  get (access: AclAccess, topic: string): CachedAnswer | undefined {
    return (access === 'publish' ? this.#publish : this.#subscribe).get(topic)
  }

  /** Keeps an answer as the newest; beyond `max` answers the oldest goes. */
  set (access: AclAccess, topic: string, allow: boolean, expiresAt: number, max: number): void {
    this.delete(access, topic)
    const answer: CachedAnswer = { allow, expiresAt, access, topic }
    ;(access === 'publish' ? this.#publish : this.#subscribe).set(topic, answer)
    this.#age.add(answer)
    if (this.#age.size > max) {
      const oldest = this.#age.values().next().value as CachedAnswer
      this.delete(oldest.access, oldest.topic)
    }
  }

  delete (access: AclAccess, topic: string): void {
    const byTopic = access === 'publish' ? this.#publish : this.#subscribe
    const answer = byTopic.get(topic)
    if (answer === undefined) return
    byTopic.delete(topic)
    this.#age.delete(answer)
  }

  clear (): void {
    this.#publish.clear()
    this.#subscribe.clear()
    this.#age.clear()
  }

  /** `p:<topic>` and `s:<topic>`, oldest first */
  * keys (): IterableIterator<string> {
    for (const answer of this.#age) yield (answer.access === 'publish' ? 'p:' : 's:') + answer.topic
  }
}
