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
  /** how many keys it holds (Redis: HLEN; LevelDB counts its keys) */
  size: () => Promise<number>
}

/** Where the sections live. */
export type TextStores = (name: string) => TextStore

export function levelTextStores (db: Level<string, Buffer>): TextStores {
  return (name) => {
    const level = textSublevel(db, name)
    return {
      get: async (key) => await level.get(key),
      put: async (key, value) => { await level.put(key, value) },
      del: async (key) => { await level.del(key) },
      entries: () => level.iterator(),
      size: async () => {
        let n = 0
        for await (const _key of level.keys()) n++
        return n
      }
    }
  }
}

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
      size: async () => await redis.hlen(hash)
    }
  }
}
