// The alarm `cluster_redis_unreachable`: raised when the connection to the
// cluster's Redis (or the master its Sentinels name) is lost, cleared when it
// is back. Meanwhile the node serves its own clients and queues bus messages
// (cluster.bus.window of them, then its publishers wait).
import type { Redis } from 'ioredis'
import type { Alarms } from '../sys/alarms.js'

export const REDIS_ALARM = 'cluster_redis_unreachable'

/** Watches `redis` (the node's store connection); returns the unwatch. */
export function watchRedis (redis: Redis, alarms: Alarms, window: number): () => void {
  const lost = (): void => {
    // the node's own disconnect at stop is not an outage
    if (redis.status === 'end') return
    alarms.raise({
      id: REDIS_ALARM,
      severity: 'critical',
      title: 'cluster Redis unreachable',
      summary: `the cluster's Redis cannot be reached: messages for other nodes are queued (up to cluster.bus.window = ${window}, then publishers wait), the shared store waits`
    })
  }
  const back = (): void => { alarms.clear(REDIS_ALARM) }
  redis.on('close', lost)
  redis.on('ready', back)
  return () => {
    redis.off('close', lost)
    redis.off('ready', back)
    alarms.clear(REDIS_ALARM)
  }
}
