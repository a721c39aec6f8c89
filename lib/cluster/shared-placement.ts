// Shared subscriptions across the nodes of a cluster: every node with members
// of a group receives each message of the group's filter (the engine's bus is
// Redis), and exactly one of them delivers it. Each node records in Redis how
// many members it has in each group (`<cluster>:shared:<group>`, node → count,
// changes announced on `<cluster>:shared-changed`); every node then draws the
// same node from the message's own identity (publisher for the `hash`
// strategy, the group for `sticky`, else the message) by weighted rendezvous
// hashing over the nodes with members that it has not seen go down, and only
// that node delivers (to one of its members, by the strategy).
//
// No loss when a node dies or a group's counts change: a node keeps each
// message it drew for another node for a while (`holdMs`, longer than a dead
// node takes to be noticed). When a node goes down, the messages held for it
// are drawn again among the others (rendezvous: each node's next choice is the
// same on every node, whenever each notices), and the one drawn delivers them;
// when a node's count drops, so do those held for it in the last second (the
// other nodes may have learnt of the change that much later). The price is
// duplicates, as QoS 1 allows: what the dead node had delivered in its last
// `holdMs`, and what both views gave to two nodes while the counts changed.
import type { Redis } from 'ioredis'
import type { Logger } from '../log.js'
import { HeldRing, type Redeliver } from './held-ring.js'

/** messages held for other nodes at most (oldest dropped beyond it) */
const HOLD_MAX = 100_000
/** how much later than the node itself another node may learn that its count dropped */
const CHANGE_MARGIN_MS = 1000
/** how often the expired held messages are let go */
const SWEEP_MS = 1000

/** murmur3's finalizer: the draw's hash of (message, node) */
function mix32 (value: number): number {
  let h = value
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return h >>> 0
}

/**
 * FNV-1a over the UTF-16 code units, then murmur3's finalizer: cheap, not
 * cryptographic (nothing here is secret; a publisher that picks ids to land on
 * one node only picks where its own messages go), and the same on every node.
 */
export function hash32 (text: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  return mix32(h)
}

export class SharedPlacement {
  /** group key → node → its member count, as last read from Redis */
  readonly #counts = new Map<string, Map<string, number>>()
  /** nodes the membership saw go down (until seen live again) */
  readonly #down = new Set<string>()
  readonly #nodeHashes = new Map<string, number>()
  /** messages drawn for another node, oldest first */
  readonly #held: HeldRing<unknown>
  #dropped = 0
  #sweeper: NodeJS.Timeout | undefined
  readonly #channel: string
  /** every group that has had members (`<cluster>:shared-groups`), so a node that left is found without a key scan */
  readonly #groups: string

  constructor (
    private readonly redis: Redis,
    private readonly sub: Redis,
    private readonly prefix: string,
    private readonly node: string,
    private readonly logger: Logger,
    /** how long a message drawn for another node is kept, should that node turn out dead */
    private readonly holdMs: number,
    /** delivers here a held message drawn for this node again (that node went down, or its count dropped) */
    redeliver: Redeliver<unknown>
  ) {
    this.#held = new HeldRing(HOLD_MAX, redeliver)
    this.#channel = `${prefix}:shared-changed`
    this.#groups = `${prefix}:shared-groups`
  }

  async start (): Promise<void> {
    this.sub.on('message', (channel: string, group: string) => {
      if (channel === this.#channel && this.#counts.has(group)) this.#refresh(group)
    })
    await this.sub.subscribe(this.#channel)
    this.#sweeper = setInterval(() => this.#held.expire(Date.now() - this.holdMs), Math.min(SWEEP_MS, this.holdMs))
    this.#sweeper.unref()
  }

  stop (): void {
    this.sub.disconnect()
    clearInterval(this.#sweeper)
    this.#held.clear()
  }

  #key (group: string): string {
    return `${this.prefix}:shared:${group}`
  }

  /** This node now has `count` members in `group`; resolves once the cluster's counts for it are known here. */
  async update (group: string, count: number): Promise<void> {
    if (count > 0) await this.redis.multi().hset(this.#key(group), this.node, count).sadd(this.#groups, group).exec()
    else await this.redis.hdel(this.#key(group), this.node)
    await this.#load(group, count > 0)
    await this.redis.publish(this.#channel, group)
  }

  /**
   * Whether this node delivers the message whose identity is `identity` to
   * `group`. When another node does, `item` is kept for the redelivery
   * function should the message be drawn for this node again.
   */
  claim (group: string, identity: string, item: unknown): boolean {
    const hash = hash32(identity)
    const drawn = this.#draw(group, hash)
    if (drawn === undefined || drawn === this.node) return true
    if (!this.#held.push(Date.now(), group, hash, drawn, item) && this.#dropped++ % 100_000 === 0) {
      this.logger.warn({ held: HOLD_MAX }, 'shared subscription messages held for other nodes past the bound: the oldest are no longer kept for a node\'s loss')
    }
    return false
  }

  /** The membership saw `node` go down: it draws nothing more, and what was held for it is drawn again. */
  nodeDown (node: string): void {
    if (node === this.node) return
    this.#down.add(node)
    this.#redraw(Date.now() - this.holdMs, (_group, drawnFor) => drawnFor === node)
  }

  /** The nodes with members of `group` and their counts, as this node sees them now (what its draws use). */
  seen (group: string): ReadonlyMap<string, number> | undefined {
    return this.#counts.get(group)
  }

  /** The live nodes now: a node seen down that is back draws again. */
  nodesLive (live: string[]): void {
    for (const node of live) this.#down.delete(node)
  }

  /** A node left the cluster: its members are gone from every group. */
  async forgetNode (node: string): Promise<void> {
    for (const group of await this.redis.smembers(this.#groups)) {
      if (await this.redis.hdel(this.#key(group), node) > 0) await this.redis.publish(this.#channel, group)
    }
  }

  /** Weighted rendezvous: the node with members, not seen down, whose score for this message is highest; undefined when none. */
  #draw (group: string, message: number): string | undefined {
    const counts = this.#counts.get(group)
    if (counts === undefined) return undefined
    let best: string | undefined
    let bestScore = -1
    for (const [node, count] of counts) {
      if (count <= 0 || this.#down.has(node)) continue
      const uniform = (mix32(message ^ this.#nodeHash(node)) + 0.5) / 0x1_0000_0000
      const score = count / -Math.log(uniform)
      if (score > bestScore || (score === bestScore && best !== undefined && node < best)) {
        best = node
        bestScore = score
      }
    }
    return best
  }

  #nodeHash (node: string): number {
    let value = this.#nodeHashes.get(node)
    if (value === undefined) {
      value = hash32(node)
      this.#nodeHashes.set(node, value)
    }
    return value
  }

  /** Draws again the held messages since `since` that `which` picks; delivers here those now drawn for this node. */
  #redraw (since: number, which: (group: string, drawnFor: string) => boolean): void {
    this.#held.redraw(since, which, (group, hash) => {
      const drawn = this.#draw(group, hash)
      return drawn === this.node ? undefined : drawn
    })
  }

  #refresh (group: string): void {
    this.#load(group, true).catch((err: Error) => this.logger.warn({ err: err.message, group }, 'shared subscription counts not read'))
  }

  async #load (group: string, keep: boolean): Promise<void> {
    const before = this.#counts.get(group)
    if (!keep) {
      this.#counts.delete(group)
      return
    }
    const all = await this.redis.hgetall(this.#key(group))
    const counts = new Map(Object.entries(all).map(([node, count]) => [node, Number(count)]))
    this.#counts.set(group, counts)
    const dropped = [...(before ?? [])].filter(([node, count]) => (counts.get(node) ?? 0) < count).map(([node]) => node)
    if (dropped.length === 0) return
    this.#redraw(Date.now() - CHANGE_MARGIN_MS, (heldGroup, drawnFor) => heldGroup === group && dropped.includes(drawnFor))
  }
}
