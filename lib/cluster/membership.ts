// Cluster membership kept in Redis: every heartbeat, each node sets its
// deadline (now + three heartbeats) in the sorted set `<cluster>:nodes` and
// its record in the hash `<cluster>:members`. The live nodes are those whose
// deadline has not passed, so a node that dies (even by kill -9) drops out
// within that time by itself; one range read answers, never a key scan. A
// dead node's record stays in the hash until it beats again or stops cleanly.
import { EventEmitter } from 'node:events'
import type { Redis } from 'ioredis'
import type { Logger } from '../log.js'

export interface Member {
  node: string
  status: 'Running'
  /** unix ms */
  started_at: number
  /** the engine's id: the broker id in its $SYS heartbeats and stored wills */
  engine_id: string
  /** where MQTT clients reach it (`host:port` of its TCP listener), for a drained client's Server Reference */
  address?: string
}

export class Membership extends EventEmitter {
  #timer: NodeJS.Timeout | undefined
  /** the live members as of the last heartbeat */
  #records: Member[] = []
  #lastBeat = 0
  /** every node seen live in this node's lifetime, and the live ones of the latest read */
  readonly #seen = new Set<string>()
  #lastRead = new Set<string>()
  readonly #deadlines: string
  readonly #members: string

  constructor (
    private readonly redis: Redis,
    prefix: string,
    readonly self: Member,
    private readonly heartbeatMs: number,
    private readonly logger: Logger
  ) {
    super()
    this.#deadlines = `${prefix}:nodes`
    this.#members = `${prefix}:members`
  }

  async start (): Promise<void> {
    await this.#beat()
    this.#timer = setInterval(() => {
      this.#beat().catch((err: Error) => this.logger.warn({ err: err.message }, 'cluster heartbeat failed'))
    }, this.heartbeatMs)
    this.#timer.unref()
  }

  async stop (): Promise<void> {
    clearInterval(this.#timer)
    this.#timer = undefined
    await this.redis.multi().zrem(this.#deadlines, this.self.node).hdel(this.#members, this.self.node).exec().catch(() => {})
  }

  /** The live nodes, sorted by name (this one always among them). */
  async members (): Promise<Member[]> {
    const now = Date.now()
    const names = await this.redis.zrangebyscore(this.#deadlines, now, '+inf')
    const values = names.length === 0 ? [] : await this.redis.hmget(this.#members, ...names)
    const members = new Map<string, Member>([[this.self.node, this.self]])
    for (const value of values) {
      if (value === null) continue
      const member = JSON.parse(value) as Member
      members.set(member.node, member)
    }
    for (const node of members.keys()) this.#seen.add(node)
    this.#lastRead = new Set(members.keys())
    return [...members.values()].sort((a, b) => a.node.localeCompare(b.node))
  }

  /** The live nodes as of the last heartbeat, sorted (this one before the first). */
  live (): string[] {
    return this.#records.length === 0 ? [this.self.node] : this.#records.map((m) => m.node)
  }

  /** The last heartbeat reached Redis less than three intervals ago. */
  linked (): boolean {
    return Date.now() - this.#lastBeat < this.heartbeatMs * 3
  }

  /** The live members as of the last heartbeat. */
  liveMembers (): Member[] {
    return this.#records
  }

  /**
   * Nodes seen in this node's lifetime that were not live at the latest read
   * of the members, so that after `await members()` the two lists agree.
   */
  stopped (): string[] {
    return [...this.#seen].filter((node) => !this.#lastRead.has(node)).sort()
  }

  async #beat (): Promise<void> {
    const now = Date.now()
    // passed deadlines go by score, so a node that beats at the same moment keeps its new one
    await this.redis.multi()
      .zadd(this.#deadlines, now + this.heartbeatMs * 3, this.self.node)
      .hset(this.#members, this.self.node, JSON.stringify(this.self))
      .zremrangebyscore(this.#deadlines, '-inf', `(${now}`)
      .exec()
    this.#lastBeat = Date.now()
    const before = new Set(this.live())
    this.#records = await this.members()
    const live = new Set(this.live())
    for (const node of live) {
      if (!before.has(node)) this.logger.info({ peer: node }, 'cluster node joined')
    }
    for (const node of before) {
      if (!live.has(node)) {
        this.logger.warn({ peer: node }, 'cluster node left')
        this.emit('nodedown', node)
      }
    }
    if (live.size !== before.size || [...live].some((node) => !before.has(node))) this.emit('changed')
  }
}
