// Named key → string sections of durable state that is the node's own on one
// node (LevelDB sublevels) and the cluster's in cluster mode (Redis hashes):
// banned entries, plugin stores, session timers.
import type { Redis } from 'ioredis'
import type { Level } from 'level'
import { textSublevel } from './store.js'

export interface TextStore {
  get: (key: string) => Promise<string | undefined>
  put: (key: string, value: string) => Promise<void>
  del: (key: string) => Promise<void>
  entries: () => AsyncIterable<[string, string]>
  /**
   * In one step: when the key holds `expected` (undefined: the key is absent),
   * sets it to `value` (undefined: deletes it) and answers true; otherwise
   * changes nothing and answers false. Atomic across the cluster's nodes, so
   * two nodes that race for a record cannot both take it.
   */
  swap: (key: string, expected: string | undefined, value: string | undefined) => Promise<boolean>
  /** how many keys it holds (Redis: HLEN; LevelDB counts its keys) */
  size: () => Promise<number>
}

/** Where the sections live. */
export type TextStores = (name: string) => TextStore

export function levelTextStores (db: Level<string, Buffer>): TextStores {
  return (name) => {
    const level = textSublevel(db, name)
    // one process holds the database: a key's writes run one after another, so a swap's read and write are one step
    const inTurn = keyTurns()
    return {
      get: async (key) => await level.get(key),
      put: async (key, value) => { await inTurn(key, async () => { await level.put(key, value) }) },
      del: async (key) => { await inTurn(key, async () => { await level.del(key) }) },
      entries: () => level.iterator(),
      swap: async (key, expected, value) => await inTurn(key, async () => {
        if (await level.get(key) !== expected) return false
        if (value === undefined) await level.del(key)
        else await level.put(key, value)
        return true
      }),
      size: async () => {
        let n = 0
        for await (const _key of level.keys()) n++
        return n
      }
    }
  }
}

/** Runs the operations on one key in the order they were asked for; other keys do not wait. */
function keyTurns (): <T>(key: string, run: () => Promise<T>) => Promise<T> {
  const last = new Map<string, Promise<unknown>>()
  return async (key, run) => {
    const turn = (last.get(key) ?? Promise.resolve()).then(run)
    const settled = turn.catch(() => {})
    last.set(key, settled)
    try {
      return await turn
    } finally {
      if (last.get(key) === settled) last.delete(key)
    }
  }
}

// KEYS[1] the hash; ARGV: field, whether the field must be absent, expected value, whether to delete, new value
const SWAP = `
local current = redis.call('HGET', KEYS[1], ARGV[1])
if ARGV[2] == '1' then
  if current then return 0 end
elseif current ~= ARGV[3] then
  return 0
end
if ARGV[4] == '1' then redis.call('HDEL', KEYS[1], ARGV[1]) else redis.call('HSET', KEYS[1], ARGV[1], ARGV[5]) end
return 1`

/** One Redis hash per section, `<prefix>:<name>`. */
export function redisTextStores (redis: Redis, prefix: string): TextStores {
  return (name) => {
    const hash = `${prefix}:${name}`
    return {
      get: async (key) => await redis.hget(hash, key) ?? undefined,
      put: async (key, value) => { await redis.hset(hash, key, value) },
      del: async (key) => { await redis.hdel(hash, key) },
      async * entries () {
        const all = await redis.hgetall(hash)
        yield * Object.keys(all).sort().map((key): [string, string] => [key, all[key]])
      },
      swap: async (key, expected, value) => await redis.eval(SWAP, 1, hash, key,
        expected === undefined ? '1' : '0', expected ?? '', value === undefined ? '1' : '0', value ?? '') === 1,
      size: async () => await redis.hlen(hash)
    }
  }
}
