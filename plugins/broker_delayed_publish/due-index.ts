// The ids of the messages this node will publish, earliest due first: a
// binary min-heap of ids (an id starts with its due time, so string order is
// due order) and the set of those still pending. Removing an id only drops
// it from the set; the heap forgets it when it reaches the top, and is
// rebuilt from the set when most of it is such leftovers, so memory stays
// proportional to what is pending.

export class DueIndex {
  #heap: string[] = []
  readonly #pending = new Set<string>()

  get size (): number {
    return this.#pending.size
  }

  has (id: string): boolean {
    return this.#pending.has(id)
  }

  add (id: string): void {
    if (this.#pending.has(id)) return
    this.#pending.add(id)
    this.#heap.push(id)
    this.#up(this.#heap.length - 1)
  }

  /** false when it was not pending */
  remove (id: string): boolean {
    if (!this.#pending.delete(id)) return false
    if (this.#heap.length > 1024 && this.#heap.length > 2 * this.#pending.size) this.#rebuild()
    return true
  }

  /** The earliest pending id, or undefined. */
  peek (): string | undefined {
    this.#dropRemoved()
    return this.#heap[0]
  }

  /** Takes the earliest pending id out. */
  shift (): string | undefined {
    this.#dropRemoved()
    const first = this.#pop()
    if (first !== undefined) this.#pending.delete(first)
    return first
  }

  clear (): void {
    this.#heap.length = 0
    this.#pending.clear()
  }

  #dropRemoved (): void {
    while (this.#heap.length > 0 && !this.#pending.has(this.#heap[0])) this.#pop()
  }

  #pop (): string | undefined {
    const heap = this.#heap
    const first = heap[0]
    const last = heap.pop()
    if (heap.length > 0 && last !== undefined) {
      heap[0] = last
      this.#down(0)
    }
    return first
  }

  #rebuild (): void {
    // a sorted array is a heap
    this.#heap = [...this.#pending].sort()
  }

  #up (i: number): void {
    const heap = this.#heap
    const item = heap[i]
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (heap[parent] <= item) break
      heap[i] = heap[parent]
      i = parent
    }
    heap[i] = item
  }

  #down (i: number): void {
    const heap = this.#heap
    const n = heap.length
    const item = heap[i]
    for (;;) {
      let child = 2 * i + 1
      if (child >= n) break
      if (child + 1 < n && heap[child + 1] < heap[child]) child++
      if (heap[child] >= item) break
      heap[i] = heap[child]
      i = child
    }
    heap[i] = item
  }
}
