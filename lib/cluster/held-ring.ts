// The messages a node drew for other nodes and keeps for a while, should one
// of those nodes turn out dead (shared-placement.ts): a ring of parallel
// arrays, oldest first. Holding a message is a few stores (no object, no
// closure per message); letting the expired ones go is one sweep by the
// owner's timer. The ring grows by doubling up to its bound, then drops the oldest.
// One redelivery function serves every held message (given at construction).

/** Delivers here a held item drawn again for this node. */
export type Redeliver<T> = (group: string, item: T) => void

const FIRST_CAPACITY = 1024

export class HeldRing<T> {
  #at: number[] = []
  #group: string[] = []
  /** the message's identity hash, all a draw needs of it */
  #hash: number[] = []
  /** the node it is drawn for; undefined once it was delivered here */
  #drawnFor: Array<string | undefined> = []
  #item: Array<T | undefined> = []
  #head = 0
  #size = 0

  /** `later` delivers here the held items drawn for this node again */
  constructor (private readonly max: number, private readonly later: Redeliver<T>) {}

  get size (): number {
    return this.#size
  }

  /** Holds one message; false when the ring was full and the oldest was dropped for it. */
  push (at: number, group: string, hash: number, drawnFor: string, item: T): boolean {
    let kept = true
    if (this.#size === this.#at.length) {
      if (this.#size < this.max) this.#grow(Math.min(this.max, Math.max(FIRST_CAPACITY, this.#size * 2)))
      else {
        this.#release(this.#head)
        this.#head = (this.#head + 1) % this.#at.length
        this.#size--
        kept = false
      }
    }
    const slot = (this.#head + this.#size) % this.#at.length
    this.#at[slot] = at
    this.#group[slot] = group
    this.#hash[slot] = hash
    this.#drawnFor[slot] = drawnFor
    this.#item[slot] = item
    this.#size++
    return kept
  }

  /** Lets go of the messages held before `before` (ms since the epoch). */
  expire (before: number): void {
    while (this.#size > 0 && this.#at[this.#head] < before) {
      this.#release(this.#head)
      this.#head = (this.#head + 1) % this.#at.length
      this.#size--
    }
    if (this.#size === 0) this.clear()
  }

  clear (): void {
    this.#at = []
    this.#group = []
    this.#hash = []
    this.#drawnFor = []
    this.#item = []
    this.#head = 0
    this.#size = 0
  }

  /**
   * Draws again, oldest first, the messages held since `since` that `which`
   * picks; `draw` names the node each is drawn for now (undefined: this node).
   * Those drawn for this node leave the ring's care and are redelivered, after the walk.
   */
  redraw (since: number, which: (group: string, drawnFor: string) => boolean, draw: (group: string, hash: number) => string | undefined): void {
    const capacity = this.#at.length
    let first = this.#size
    while (first > 0 && this.#at[(this.#head + first - 1) % capacity] >= since) first--
    const here: Array<{ group: string, item: T }> = []
    for (let i = first; i < this.#size; i++) {
      const slot = (this.#head + i) % capacity
      const drawnFor = this.#drawnFor[slot]
      if (drawnFor === undefined || !which(this.#group[slot], drawnFor)) continue
      const drawn = draw(this.#group[slot], this.#hash[slot])
      this.#drawnFor[slot] = drawn
      if (drawn !== undefined) continue
      here.push({ group: this.#group[slot], item: this.#item[slot] as T })
      this.#release(slot)
    }
    for (const { group, item } of here) this.later(group, item)
  }

  #release (slot: number): void {
    this.#drawnFor[slot] = undefined
    this.#item[slot] = undefined
  }

  #grow (capacity: number): void {
    const order = (values: unknown[]): unknown[] => {
      const grown = new Array<unknown>(capacity)
      for (let i = 0; i < this.#size; i++) grown[i] = values[(this.#head + i) % values.length]
      return grown
    }
    this.#at = order(this.#at) as number[]
    this.#group = order(this.#group) as string[]
    this.#hash = order(this.#hash) as number[]
    this.#drawnFor = order(this.#drawnFor) as Array<string | undefined>
    this.#item = order(this.#item) as Array<T | undefined>
    this.#head = 0
  }
}
