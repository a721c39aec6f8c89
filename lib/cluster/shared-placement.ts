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
  /** group key → node → members there */
  readonly #counts = new Map<string, Map<string, number>>()
  readonly #channel: string

  constructor (
    private readonly redis: Redis,
    private readonly sub: Redis,
    private readonly prefix: string,
    private readonly node: string,
    private readonly logger: Logger
  ) {
    this.#channel = `${prefix}:shared-changed`
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
    if (count > 0) await this.redis.hset(this.#key(group), this.node, count)
    else await this.redis.hdel(this.#key(group), this.node)
    await this.#load(group, count > 0)
    await this.redis.publish(this.#channel, group)
  }

  /** Whether this node delivers the message whose identity is `identity` to `group`. */
  mine (group: string, identity: string): boolean {
    const counts = this.#counts.get(group)
    if (counts === undefined || counts.size === 0) return true
    const nodes = [...counts.keys()].sort()
    const total = nodes.reduce((sum, node) => sum + counts.get(node)!, 0)
    let draw = createHash('md5').update(identity).digest().readUInt32BE(0) % total
    for (const node of nodes) {
      draw -= counts.get(node)!
      if (draw < 0) return node === this.node
    }
    return false
  }

  /** A node left the cluster: its members are gone from every group. */
  async forgetNode (node: string): Promise<void> {
    for (const key of await this.redis.keys(`${this.prefix}:shared:*`)) {
      if (await this.redis.hdel(key, node) > 0) await this.redis.publish(this.#channel, key.slice(this.prefix.length + 8))
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
    this.#counts.set(group, new Map(Object.entries(all).map(([node, count]) => [node, Number(count)])))
  }
}
