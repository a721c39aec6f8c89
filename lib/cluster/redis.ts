// Connections to the cluster's Redis server (or the master a Sentinel set
// names), from the `cluster.redis.*` settings.
import { Redis, type RedisOptions } from 'ioredis'
import type { Config } from '../config/store.js'

function hostPort (text: string): { host: string, port: number } {
  const at = text.lastIndexOf(':')
  const host = at < 0 ? text : text.slice(0, at)
  const port = at < 0 ? 6379 : Number(text.slice(at + 1))
  return { host: host.replace(/^\[|\]$/g, ''), port }
}

export function redisOptions (config: Config): RedisOptions {
  const servers = config.get('cluster.redis.server').split(',').map((s) => s.trim()).filter((s) => s !== '')
  const password = config.get('cluster.redis.password')
  const sentinels = config.get('cluster.redis.sentinels').split(',').map((s) => s.trim()).filter((s) => s !== '')
  const masterName = config.get('cluster.redis.master_name')
  const sentinel = config.get('cluster.redis.sentinel')
  const common: RedisOptions = {
    db: config.get('cluster.redis.database'),
    ...(password === '' ? {} : { password }),
    // a command waits for a lost connection to come back (up to the retry limit) instead of failing at once
    maxRetriesPerRequest: 20,
    retryStrategy: (times) => Math.min(times * 100, 2000)
  }
  // the Sentinels are asked again at every reconnect: after a failover the connection follows the promoted replica
  if (sentinels.length > 0) return { ...common, sentinels: sentinels.map(hostPort), name: masterName }
  if (sentinel !== '') return { ...common, sentinels: servers.map(hostPort), name: sentinel }
  return { ...common, ...hostPort(servers[0] ?? '127.0.0.1:6379') }
}

/** Its errors (Redis down, restarting) are not unhandled: ioredis reconnects by itself, the node's health reports the outage. */
export function quietErrors (redis: Redis): Redis {
  redis.on('error', () => {})
  return redis
}

export function connectRedis (config: Config, extra: RedisOptions = {}): Redis {
  return quietErrors(new Redis({ ...redisOptions(config), ...extra }))
}
