// Cluster membership kept in Redis: each node writes `<cluster>:node:<name>`
// every heartbeat with an expiry of three heartbeats, so a node that dies
// (even by kill -9) drops out of the list within that time by itself.
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
  #known = new Set<string>()
  #records: Member[] = []
  #lastBeat = 0
  readonly #gone = new Set<string>()

  constructor (
    private readonly redis: Redis,
    private readonly prefix: string,
    readonly self: Member,
    private readonly heartbeatMs: number,
    private readonly logger: Logger
  ) {
    super()
  }

  #key (node: string): string {
    return `${this.prefix}:node:${node}`
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
    await this.redis.del(this.#key(this.self.node)).catch(() => {})
  }

  /** The live nodes, sorted by name (this one always among them). */
  async members (): Promise<Member[]> {
    const keys = await this.redis.keys(`${this.prefix}:node:*`)
    const values = keys.length === 0 ? [] : await this.redis.mget(...keys)
    const members = new Map<string, Member>([[this.self.node, this.self]])
    for (const value of values) {
      if (value === null) continue
      const member = JSON.parse(value) as Member
      members.set(member.node, member)
    }
    return [...members.values()].sort((a, b) => a.node.localeCompare(b.node))
  }

  /** The live nodes as of the last heartbeat, sorted (this one before the first). */
  live (): string[] {
    return this.#known.size === 0 ? [this.self.node] : [...this.#known].sort()
  }

  /** The last heartbeat reached Redis less than three intervals ago. */
  linked (): boolean {
    return Date.now() - this.#lastBeat < this.heartbeatMs * 3
  }

  /** The live members as of the last heartbeat. */
  liveMembers (): Member[] {
    return this.#records
  }

  /** Nodes seen in this node's lifetime that are not live now. */
  stopped (): string[] {
    return [...this.#gone].sort()
  }

  async #beat (): Promise<void> {
    await this.redis.set(this.#key(this.self.node), JSON.stringify(this.self), 'PX', this.heartbeatMs * 3)
    this.#lastBeat = Date.now()
    this.#records = await this.members()
    const live = new Set(this.#records.map((m) => m.node))
    for (const node of live) {
      if (!this.#known.has(node) && node !== this.self.node) {
        this.#gone.delete(node)
        this.logger.info({ peer: node }, 'cluster node joined')
        this.emit('nodeup', node)
      }
    }
    for (const node of this.#known) {
      if (!live.has(node)) {
        this.#gone.add(node)
        this.logger.warn({ peer: node }, 'cluster node left')
        this.emit('nodedown', node)
      }
    }
    const changed = live.size !== this.#known.size || [...live].some((node) => !this.#known.has(node))
    this.#known = live
    if (changed) this.emit('changed')
  }
}
