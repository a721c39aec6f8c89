// The ids of the messages this node will publish, earliest due first: a
// binary min-heap over two parallel arrays (due time as a number, then the
// id; comparing numbers is what keeps a million entries cheap) and the set of
// ids still pending. Removing an id only drops it from the set; the heap
// forgets it when it reaches the top, and is rebuilt from the set when most
// of it is such leftovers, so memory stays proportional to what is pending.
import { dueOf } from './record.js'

export class DueIndex {
  #dues: number[] = []
  #ids: string[] = []
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
    this.#dues.push(dueOf(id))
    this.#ids.push(id)
    this.#up(this.#ids.length - 1)
  }

  /** false when it was not pending */
  remove (id: string): boolean {
    if (!this.#pending.delete(id)) return false
    if (this.#ids.length > 1024 && this.#ids.length > 2 * this.#pending.size) this.#rebuild()
    return true
  }

  /** The earliest pending id, or undefined. */
  peek (): string | undefined {
    this.#dropRemoved()
    return this.#ids[0]
  }

  /** Takes the earliest pending id out. */
  shift (): string | undefined {
    this.#dropRemoved()
    const first = this.#pop()
    if (first !== undefined) this.#pending.delete(first)
    return first
  }

  clear (): void {
    this.#dues = []
    this.#ids = []
    this.#pending.clear()
  }

  #dropRemoved (): void {
    while (this.#ids.length > 0 && !this.#pending.has(this.#ids[0])) this.#pop()
  }

  #pop (): string | undefined {
    const ids = this.#ids
    const dues = this.#dues
    const first = ids[0]
    const lastId = ids.pop()
    const lastDue = dues.pop()
    if (ids.length > 0 && lastId !== undefined && lastDue !== undefined) {
      ids[0] = lastId
      dues[0] = lastDue
      this.#down(0)
    }
    return first
  }

  #rebuild (): void {
    // a sorted array is a heap (ids sort by due time)
    this.#ids = [...this.#pending].sort()
    this.#dues = this.#ids.map(dueOf)
  }

  /** Whether the entry at `a` comes before the one at `b`. */
  #before (a: number, b: number): boolean {
    const dues = this.#dues
    return dues[a] < dues[b] || (dues[a] === dues[b] && this.#ids[a] < this.#ids[b])
  }

  #swap (a: number, b: number): void {
    const ids = this.#ids
    const dues = this.#dues
    const id = ids[a]
    ids[a] = ids[b]
    ids[b] = id
    const due = dues[a]
    dues[a] = dues[b]
    dues[b] = due
  }

  #up (i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (!this.#before(i, parent)) break
      this.#swap(i, parent)
      i = parent
    }
  }

  #down (i: number): void {
    const n = this.#ids.length
    for (;;) {
      let child = 2 * i + 1
      if (child >= n) break
      if (child + 1 < n && this.#before(child + 1, child)) child++
      if (!this.#before(child, i)) break
      this.#swap(i, child)
      i = child
    }
  }
}
