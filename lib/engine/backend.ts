// Where the node keeps its state. One node: LevelDB under data/ for
// everything. A Redis cluster (`cluster.discovery = redis`): the engine's
// message bus (lib/cluster/bus.ts), its persistence (aedes-persistence-redis) and
// the shared sections (banned, plugin stores, timers) live in Redis, so every
// node sees them; LevelDB stays open for nothing shared.
import { createRequire } from 'node:module'
import { Readable } from 'node:stream'
import type { Redis } from 'ioredis'
import type { Level } from 'level'
import type { Config } from '../config/store.js'
import { RedisBus } from '../cluster/bus.js'
import { connectRedis } from '../cluster/redis.js'
import { openStore, wipeLevelQueue, type AedesPersistence } from './store.js'
import { levelTextStores, redisTextStores, type TextStores } from './text-store.js'

const require = createRequire(import.meta.url)
const AsyncRedisPersistence = require('aedes-persistence-redis/asyncPersistence.js') as new (options: { conn: Redis }) => AedesPersistence

export interface Backend {
  db: Level<string, Buffer>
  persistence: AedesPersistence
  /** the engine's message bus in a cluster; undefined: Aedes' in-memory one */
  mq?: RedisBus
  stores: TextStores
  /** removes a session's queued messages */
  wipeQueue: (clientId: string) => Promise<void>
  /** the state is shared with other nodes */
  shared: boolean
  /** the cluster's Redis connection for the node's own keys */
  redis?: Redis
  /** client ids with stored subscriptions (persistent sessions, offline ones included), when the store says so itself */
  storedClients?: () => Promise<string[]>
  /** the store can be used */
  available: () => boolean
  /** closes what the engine does not close itself (the engine closes mq and the persistence) */
  close: () => Promise<void>
}

/** aedes-persistence-redis answers these with async generators; Aedes reads them as streams (as the level persistence gives). */
const STREAMING = ['createRetainedStreamCombi', 'createRetainedStream', 'outgoingStream', 'streamWill', 'getClientList'] as const

function withStreams (persistence: AedesPersistence): AedesPersistence {
  const methods = persistence as unknown as Record<string, (...args: unknown[]) => unknown>
  for (const name of STREAMING) {
    const method = methods[name].bind(persistence)
    methods[name] = (...args) => {
      const result = method(...args) as AsyncIterable<unknown> & { on?: unknown }
      return typeof result.on === 'function' ? result : Readable.from(result)
    }
  }
  return persistence
}

/**
 * Every live node sweeps the stored wills of nodes that stopped beating (Aedes'
 * `_clearWills`, every 4 heartbeats); the engine patch publishes a will only
 * on the node whose `claimWill` won it (SET NX), so it fires once, not once per
 * node whose sweep read it before the first one deleted it. The claim expires
 * (the winner died before publishing: a later sweep fires it).
 */
function withWillClaim (persistence: AedesPersistence, redis: Redis, prefix: string, heartbeatMs: number): AedesPersistence {
  const ttlMs = Math.max(10_000, 8 * heartbeatMs)
  return Object.assign(persistence, {
    claimWill: async (will: { brokerId: string, clientId: string }): Promise<boolean> =>
      await redis.set(`${prefix}:will-claim:${will.brokerId}:${will.clientId}`, '1', 'PX', ttlMs, 'NX') === 'OK'
  })
}

/** Aedes' default delivery concurrency (the engine is not given another). */
const ENGINE_CONCURRENCY = 100

export async function openBackend (config: Config, dataDir: string): Promise<Backend> {
  const { db, persistence } = await openStore(dataDir)
  if (config.get('cluster.discovery') !== 'redis') {
    return {
      db,
      persistence,
      stores: levelTextStores(db),
      wipeQueue: async (clientId) => await wipeLevelQueue(db, clientId),
      shared: false,
      available: () => db.status === 'open',
      close: async () => {}
    }
  }
  // the level persistence is not used in a cluster; its store stays open for the data folder's lock
  const redis = connectRedis(config)
  const prefix = config.get('cluster.name')
  return {
    db,
    persistence: withWillClaim(withStreams(new AsyncRedisPersistence({ conn: connectRedis(config) })), redis, prefix, config.get('cluster.heartbeat_interval')),
    mq: new RedisBus({
      pub: connectRedis(config),
      sub: connectRedis(config),
      channel: `${prefix}:bus`,
      window: config.get('cluster.bus.window'),
      overflow: config.get('cluster.bus.overflow'),
      concurrency: ENGINE_CONCURRENCY
    }),
    stores: redisTextStores(redis, prefix),
    wipeQueue: async (clientId) => {
      const id = encodeURIComponent(clientId)
      await redis.del(`outgoing:${id}`)
      // a cursor scan, not KEYS: the store may hold many keys and KEYS would stall Redis for every node
      for await (const keys of redis.scanStream({ match: `outgoing-id:${id}:*`, count: 500 }) as AsyncIterable<string[]>) {
        if (keys.length > 0) await redis.del(...keys)
      }
    },
    shared: true,
    redis,
    // connected anywhere in the cluster (the registry of lib/cluster/timer-ownership.ts) is not offline
    storedClients: async () => {
      const [stored, connected] = await Promise.all([redis.smembers('clients'), redis.hkeys(`${prefix}:clients`)])
      const online = new Set(connected)
      return stored.filter((id) => !online.has(id))
    },
    available: () => db.status === 'open' && redis.status === 'ready',
    close: async () => {
      redis.disconnect()
      if (db.status === 'open') await db.close()
    }
  }
}
