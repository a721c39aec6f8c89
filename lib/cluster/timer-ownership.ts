// Who owns a session-expiry or will-delay timer in a cluster. A timer is
// armed by the node the client left; it may fire only if that node still owns
// it and the client is not connected anywhere. Redis holds both facts: the
// timers hash (written by SessionTimers, each record naming its owner) and
// the registry of connected clients (`<cluster>:clients`, client id → node).
// Connecting anywhere removes the client's timers; the check and the removal
// at firing time are one Lua script, so a client that came back elsewhere is
// never expired nor its will sent.
import type { Redis } from 'ioredis'
import { redisTextStores, type TextStore } from '../engine/text-store.js'

const CLAIM = `
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 1 then return 0 end
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then return 0 end
if cjson.decode(v).owner ~= ARGV[3] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
return 1`

export class TimerOwnership {
  readonly #timers: string
  readonly #registry: string
  /** the same two hashes as text stores, for their compare-and-swap */
  readonly #timerStore: TextStore
  readonly #registryStore: TextStore

  constructor (private readonly redis: Redis, prefix: string, readonly node: string) {
    this.#timers = `${prefix}:timers`
    this.#registry = `${prefix}:clients`
    const stores = redisTextStores(redis, prefix)
    this.#timerStore = stores('timers')
    this.#registryStore = stores('clients')
  }

  /** The client connected to this node: it is registered here and its timers, wherever armed, are void. */
  async connected (clientId: string): Promise<void> {
    await this.redis.multi().hset(this.#registry, clientId, this.node).hdel(this.#timers, `session:${clientId}`, `will:${clientId}`).exec()
  }

  /** The client left this node (unless it is registered elsewhere by now). */
  async disconnected (clientId: string): Promise<void> {
    await this.#registryStore.swap(clientId, this.node, undefined)
  }

  /** True (and the record removed) when this node owns the timer and the client is connected nowhere. */
  async claim (key: string, clientId: string): Promise<boolean> {
    return await this.redis.eval(CLAIM, 2, this.#timers, this.#registry, key, clientId, this.node) === 1
  }

  /** A node left the cluster: its clients are connected nowhere now. Returns the timer keys and records it owned. */
  async forgetNode (node: string): Promise<Array<[string, string]>> {
    const registry = await this.redis.hgetall(this.#registry)
    const gone = Object.keys(registry).filter((id) => registry[id] === node)
    if (gone.length > 0) await this.redis.hdel(this.#registry, ...gone)
    const timers = await this.redis.hgetall(this.#timers)
    return Object.entries(timers).filter(([, value]) => (JSON.parse(value) as { owner?: string }).owner === node)
  }

  /** Takes over a timer of a node that left (false when someone else did first). */
  async adopt (key: string, record: string): Promise<boolean> {
    const updated = JSON.stringify({ ...JSON.parse(record) as object, owner: this.node })
    return await this.#timerStore.swap(key, record, updated)
  }
}
