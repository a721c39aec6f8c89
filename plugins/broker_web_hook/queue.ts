// The events waiting to be posted: one FIFO lane per connection, the lane
// chosen by the client id the event is about (so one client's events are
// posted in order, as EMQ X's pool hashed by client id), all lanes under one
// bound on their count and their bytes. `push` is what a hook handler calls:
// a few comparisons and an array push, never a wait.

/** An event to post; its JSON body is built only when it is sent. */
export interface Pending {
  /** the client id the event is about: the lane */
  key: string
  /** what it holds while it waits (payload, topic, ids), in bytes */
  size: number
  body: () => string
}

export class Lane {
  #items: Array<Pending | undefined> = []
  #head = 0
  /** a worker is posting this lane's events */
  busy = false

  get length (): number {
    return this.#items.length - this.#head
  }

  push (item: Pending): void {
    this.#items.push(item)
  }

  shift (): Pending | undefined {
    if (this.#head >= this.#items.length) return undefined
    const item = this.#items[this.#head]
    this.#items[this.#head++] = undefined
    // drop the consumed front once it is most of the array
    if (this.#head >= 1024 && this.#head * 2 >= this.#items.length) {
      this.#items = this.#items.slice(this.#head)
      this.#head = 0
    }
    return item
  }

  clear (): number {
    const left = this.length
    this.#items = []
    this.#head = 0
    return left
  }
}

/** FNV-1a over the UTF-16 code units: a cheap, stable spread of client ids over the lanes. */
function laneOf (key: string, lanes: number): number {
  let hash = 0x811c9dc5
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193)
  return (hash >>> 0) % lanes
}

export class EventQueue {
  readonly lanes: Lane[]
  #count = 0
  #bytes = 0

  constructor (lanes: number, readonly maxCount: number, readonly maxBytes: number) {
    this.lanes = Array.from({ length: lanes }, () => new Lane())
  }

  get count (): number {
    return this.#count
  }

  get bytes (): number {
    return this.#bytes
  }

  /** Queues the event; answers its lane, or undefined (nothing queued) when the queue is full. */
  push (item: Pending): Lane | undefined {
    if (this.#count >= this.maxCount || this.#bytes + item.size > this.maxBytes) return undefined
    const lane = this.lanes[this.lanes.length === 1 ? 0 : laneOf(item.key, this.lanes.length)]
    lane.push(item)
    this.#count++
    this.#bytes += item.size
    return lane
  }

  /** The lane's next event, no longer counted as waiting. */
  take (lane: Lane): Pending | undefined {
    const item = lane.shift()
    if (item !== undefined) {
      this.#count--
      this.#bytes -= item.size
    }
    return item
  }

  /** Forgets every waiting event; answers how many there were. */
  clear (): number {
    const left = this.lanes.reduce((sum, lane) => sum + lane.clear(), 0)
    this.#count = 0
    this.#bytes = 0
    return left
  }
}
