// Shared subscriptions across the nodes of a cluster: every node with members
// of a group receives each message of the group's filter (the engine's bus is
// Redis), and exactly one of them delivers it. Each node records in Redis how
// many members it has in each group (`<cluster>:shared:<group>`, node → count,
// changes announced on `<cluster>:shared-changed`); every node then draws the
// same member out of the cluster-wide total from the message's own identity
// (publisher for the `hash` strategy, the group for `sticky`, else the
// message), and only the node holding that member delivers (to one of its
// members, by the strategy). While a group's counts are changing, a message
// can be delivered twice or not at all: the counts settle within one Redis
// round trip.
import { createHash } from 'node:crypto'
import type { Redis } from 'ioredis'
import type { Logger } from '../log.js'

export class SharedPlacement {
  /** group key → the nodes with members (sorted by name), their member counts, and the total: read per message */
  readonly #counts = new Map<string, { nodes: string[], counts: number[], total: number }>()
  readonly #channel: string
  /** every group that has had members (`<cluster>:shared-groups`), so a node that left is found without a key scan */
  readonly #groups: string

  constructor (
    private readonly redis: Redis,
    private readonly sub: Redis,
    private readonly prefix: string,
    private readonly node: string,
    private readonly logger: Logger
  ) {
    this.#channel = `${prefix}:shared-changed`
    this.#groups = `${prefix}:shared-groups`
  }

  async start (): Promise<void> {
    this.sub.on('message', (channel: string, group: string) => {
      if (channel === this.#channel && this.#counts.has(group)) this.#refresh(group)
    })
    await this.sub.subscribe(this.#channel)
  }

  stop (): void {
    this.sub.disconnect()
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

  /** Whether this node delivers the message whose identity is `identity` to `group`. */
  mine (group: string, identity: string): boolean {
    const placed = this.#counts.get(group)
    if (placed === undefined || placed.total === 0) return true
    let draw = createHash('md5').update(identity).digest().readUInt32BE(0) % placed.total
    for (let i = 0; i < placed.nodes.length; i++) {
      draw -= placed.counts[i]
      if (draw < 0) return placed.nodes[i] === this.node
    }
    return false
  }

  /** A node left the cluster: its members are gone from every group. */
  async forgetNode (node: string): Promise<void> {
    for (const group of await this.redis.smembers(this.#groups)) {
      if (await this.redis.hdel(this.#key(group), node) > 0) await this.redis.publish(this.#channel, group)
    }
  }

  #refresh (group: string): void {
    this.#load(group, true).catch((err: Error) => this.logger.warn({ err: err.message, group }, 'shared subscription counts not read'))
  }

  async #load (group: string, keep: boolean): Promise<void> {
    if (!keep) {
      this.#counts.delete(group)
      return
    }
    const all = await this.redis.hgetall(this.#key(group))
    const nodes = Object.keys(all).sort()
    const counts = nodes.map((node) => Number(all[node]))
    this.#counts.set(group, { nodes, counts, total: counts.reduce((sum, n) => sum + n, 0) })
  }
}
