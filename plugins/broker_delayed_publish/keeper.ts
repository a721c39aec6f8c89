// The delayed messages of one load: taken in (stored first, then indexed),
// published when due by the node that owns them, listed and deleted by the
// operator. One timer, armed for the earliest message of the index, whatever
// the number of messages; a due time past setTimeout's 2^31-1 ms is reached
// in steps. In a cluster the store is shared: each record names its owner,
// and every change of owner or removal is a compare-and-swap, so a message
// is published by one node only, even when two nodes race for it.
import type { ClusterView, Logger, PluginContext, PluginStore, PluginTimer, PublishRequest } from '../../lib/plugin-kit/index.js'
import { DueIndex } from './due-index.js'
import { decode, dueOf, encode, newId, propertiesAt, type DelayedMessage } from './record.js'

/** The longest wait setTimeout keeps. */
const MAX_TIMER_MS = 2 ** 31 - 1
/** messages published at once when many fall due together (e.g. after a long stop) */
const BATCH = 64
/** malformed records logged one by one at a scan; beyond it, only counted */
const MALFORMED_LOGGED = 10

export interface KeeperDeps {
  store: PluginStore
  timers: PluginContext<unknown>['timers']
  publish: (message: PublishRequest) => Promise<void>
  cluster: ClusterView
  /** this node's name: the owner of what it takes in */
  node: string
  logger: Logger
  /** delayed.max_delayed_messages, read at each take-in (0 = no limit) */
  limit: () => number
}

export interface ScanReport { owned: number, adopted: number, malformed: number }

export interface StoredEntry { id: string, message: DelayedMessage }

export class DelayedMessages {
  readonly #index = new DueIndex()
  readonly #deps: KeeperDeps
  /** take-ins whose store write is in flight: they count against the limit already */
  #reserved = 0
  #timer: PluginTimer | undefined
  /** the due time the timer is armed for */
  #timerAt = Infinity
  #draining = false
  #closed = false
  /** work in flight (take-ins, publishing, scans), awaited by close */
  readonly #work = new Set<Promise<unknown>>()
  /** a scan running, and whether another was asked for meanwhile */
  #scanning: Promise<ScanReport> | undefined
  #rescan = false

  constructor (deps: KeeperDeps) {
    this.#deps = deps
  }

  /** Messages this node will publish. */
  get pending (): number {
    return this.#index.size
  }

  /**
   * Stores the message and arms it; 'quota' when this node holds
   * `delayed.max_delayed_messages` already. A store failure rejects.
   */
  async takeIn (message: DelayedMessage): Promise<'taken' | 'quota'> {
    if (this.#closed) throw new Error('the plugin is unloading')
    const limit = this.#deps.limit()
    if (limit > 0 && this.#index.size + this.#reserved >= limit) return 'quota'
    this.#reserved++
    try {
      const id = newId(message.expectedAt)
      await this.#track(this.#deps.store.put(id, encode(message)))
      // stored: a load that ends now leaves it to the next one
      if (!this.#closed) {
        this.#index.add(id)
        this.#schedule()
      }
      return 'taken'
    } finally {
      this.#reserved--
    }
  }

  /**
   * Reads the store: indexes the messages this node owns, takes over those
   * of nodes no longer in the cluster, skips (and logs) records that do not
   * decode. Scans run one at a time; one asked for while another runs runs
   * after it.
   */
  async scan (): Promise<ScanReport> {
    if (this.#scanning !== undefined) {
      this.#rescan = true
      return await this.#scanning
    }
    const run = async (): Promise<ScanReport> => {
      let report: ScanReport
      do {
        this.#rescan = false
        report = await this.#scanOnce()
      } while (this.#rescan && !this.#closed)
      return report
    }
    this.#scanning = this.#track(run()).finally(() => { this.#scanning = undefined })
    return await this.#scanning
  }

  /** The stored messages (every node's, in a cluster) in due order, `count` of them in all, those from `offset` up to `limit`. */
  async list (offset: number, limit: number): Promise<{ count: number, entries: StoredEntry[] }> {
    let count = 0
    const entries: StoredEntry[] = []
    for await (const [id, value] of this.#deps.store.entries()) {
      const decoded = decode(id, value)
      if ('why' in decoded) continue
      if (count >= offset && entries.length < limit) entries.push({ id, message: decoded.message })
      count++
    }
    return { count, entries }
  }

  /** One stored message, or undefined. */
  async get (id: string): Promise<DelayedMessage | undefined> {
    const value = await this.#deps.store.get(id)
    if (value === undefined) return undefined
    const decoded = decode(id, value)
    return 'why' in decoded ? undefined : decoded.message
  }

  /** Deletes a stored message (malformed or not) so it is never published; false when there is none. */
  async remove (id: string): Promise<boolean> {
    const store = this.#deps.store
    // a record may change under us (taken over by another node): read it again until the swap holds
    for (let attempt = 0; attempt < 5; attempt++) {
      const value = await store.get(id)
      if (value === undefined) return false
      if (await store.swap(id, value, undefined)) {
        this.#index.remove(id)
        this.#schedule()
        return true
      }
    }
    throw new Error(`delayed message ${id} kept changing; not deleted`)
  }

  /** Stops the timer, waits for the work in flight; the store keeps every message not yet published. */
  async close (): Promise<void> {
    this.#closed = true
    this.#cancelTimer()
    while (this.#work.size > 0) await Promise.allSettled([...this.#work])
    this.#index.clear()
  }

  async #scanOnce (): Promise<ScanReport> {
    const { store, cluster, node, logger } = this.#deps
    const live = new Set(await cluster.nodes())
    const report: ScanReport = { owned: 0, adopted: 0, malformed: 0 }
    const from = new Set<string>()
    for await (const [id, value] of store.entries()) {
      if (this.#closed) break
      const decoded = decode(id, value)
      if ('why' in decoded) {
        if (report.malformed++ < MALFORMED_LOGGED) logger.warn({ id: id.slice(0, 64), why: decoded.why }, 'stored delayed message is malformed; skipped')
        continue
      }
      const owner = decoded.message.node
      if (owner === node) {
        this.#index.add(id)
        report.owned++
      } else if (!live.has(owner) && await store.swap(id, value, encode({ ...decoded.message, node }))) {
        this.#index.add(id)
        report.adopted++
        logger.debug({ id, from: owner }, 'delayed message taken over from a node that left')
        from.add(owner)
      }
    }
    if (report.adopted > 0) logger.info({ adopted: report.adopted, from: [...from] }, 'delayed messages taken over from nodes that left')
    if (report.malformed > MALFORMED_LOGGED) logger.warn({ malformed: report.malformed }, 'stored delayed messages malformed; skipped')
    this.#schedule()
    return report
  }

  #schedule (): void {
    if (this.#closed || this.#draining) return
    const next = this.#index.peek()
    if (next === undefined) {
      this.#cancelTimer()
      return
    }
    const due = dueOf(next)
    if (this.#timer !== undefined && this.#timerAt <= due) return
    this.#cancelTimer()
    this.#timerAt = due
    const wait = Math.min(Math.max(0, due - Date.now()), MAX_TIMER_MS)
    this.#timer = this.#deps.timers.setTimeout(() => {
      this.#timer = undefined
      this.#timerAt = Infinity
      const first = this.#index.peek()
      if (first !== undefined && dueOf(first) <= Date.now()) this.#track(this.#drain())
      else this.#schedule()
    }, wait)
  }

  #cancelTimer (): void {
    this.#timer?.cancel()
    this.#timer = undefined
    this.#timerAt = Infinity
  }

  /** Publishes what is due, a batch at a time, then arms the timer for the next. */
  async #drain (): Promise<void> {
    this.#draining = true
    try {
      while (!this.#closed) {
        const now = Date.now()
        const batch: string[] = []
        while (batch.length < BATCH) {
          const next = this.#index.peek()
          if (next === undefined || dueOf(next) > now) break
          batch.push(next)
          this.#index.shift()
        }
        if (batch.length === 0) break
        await Promise.all(batch.map(async (id) => await this.#fire(id)))
      }
    } finally {
      this.#draining = false
      this.#schedule()
    }
  }

  /** Publishes one due message if this node still owns it; the record goes first, so no other node publishes it too. */
  async #fire (id: string): Promise<void> {
    const { store, node, logger, publish } = this.#deps
    try {
      const value = await store.get(id)
      // deleted, or published by a node that took it over
      if (value === undefined) return
      const decoded = decode(id, value)
      if ('why' in decoded) {
        logger.warn({ id, why: decoded.why }, 'stored delayed message is malformed; not published')
        return
      }
      const message = decoded.message
      if (message.node !== node || !await store.swap(id, value, undefined)) return
      const now = Date.now()
      const carried = propertiesAt(message, now)
      if (carried === undefined) {
        logger.info({ id, topic: message.topic }, 'delayed message expired before it fell due; dropped')
        return
      }
      try {
        await publish({ topic: message.topic, payload: message.payload, qos: message.qos, retain: message.retain, ...carried })
      } catch (err) {
        // back in the store: the next load publishes it
        await store.swap(id, undefined, value)
        throw err
      }
      logger.debug({ id, topic: message.topic, late: now - message.expectedAt }, 'delayed message published')
    } catch (err) {
      logger.error({ err, id }, 'delayed message not published')
    }
  }

  /** Tracks a promise until it settles, so close() can wait for it. */
  #track<T> (work: Promise<T>): Promise<T> {
    this.#work.add(work)
    const forget = (): void => { this.#work.delete(work) }
    work.then(forget, forget)
    return work
  }
}
