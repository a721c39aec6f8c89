// The node as a whole: broker and node information, metrics, statistics,
// alarms, listeners, health, and the value of a setting.
import type { AnyKey, Canonical, SettingValue } from '../config/schema.js'
import type { V3Metrics } from '../metrics/metrics.js'
import type { V3Stats } from '../metrics/stats.js'
import { healthOf, type Health } from '../node-state.js'
import type { Alarm, ClearedAlarm } from '../sys/alarms.js'
import type { BrokerInfo, NodeStats } from '../sys/node-info.js'
import type { OperationContext } from './context.js'
import type { ListenerRecord } from './facts.js'
import { ServiceError } from './service-error.js'

/** Settings no operation shows: the cluster's keys. */
export const SECRET_SETTINGS: ReadonlySet<string> = new Set(['cluster.cookie', 'cluster.redis.password'])

export interface NodeStatus {
  /** A setting's value (a secret one is `not_found`). */
  setting: <K extends AnyKey>(key: K) => SettingValue<Canonical<K>>
  /** Every metric, statistic and process figure in the Prometheus text format. */
  prometheus: () => Promise<{ contentType: string, text: string }>
  brokerInfo: () => BrokerInfo
  /** memory in bytes */
  nodeStats: () => Promise<NodeStats>
  metrics: () => V3Metrics
  stats: () => V3Stats
  /** §2.11 with the v2 keys (`packets/disconnect`, no auth/expired/forward keys) */
  metricsV2: () => Record<string, number>
  /** §2.12 with the v2 keys (`clients/*` for connections, no persistent/shared keys) */
  statsV2: () => Record<string, number>
  /** the alarms raised and not cleared, oldest first */
  alarms: () => Alarm[]
  /** the alarms cleared (the newest 1000), oldest first, each with its `clear_at` */
  alarmHistory: () => ClearedAlarm[]
  /** The MQTT listeners, then those the plugins serve (the management API's `http:management` …). */
  listeners: () => ListenerRecord[]
  /**
   * Whether the node serves: `reasons` empty when it accepts MQTT. `readiness`
   * adds the checks that decide whether clients should be sent here (cluster:
   * the link to the other nodes).
   */
  health: (options?: { readiness?: boolean }) => Health
}

export function nodeStatus (context: OperationContext): NodeStatus {
  const { parts, tracking } = context
  const { observability } = parts
  return {
    setting: (key) => {
      if (SECRET_SETTINGS.has(key)) throw new ServiceError('not_found', `no setting ${key}`)
      return parts.config.get(key)
    },
    prometheus: async () => ({ contentType: observability.prometheus.contentType, text: await observability.prometheus.text() }),
    brokerInfo: () => observability.brokerInfo(),
    nodeStats: async () => await observability.nodeStats(),
    metrics: () => observability.metricsV3(),
    stats: () => observability.statsV3(),
    metricsV2: () => observability.metricsV2(),
    statsV2: () => observability.statsV2(),
    alarms: () => observability.alarms.present(),
    alarmHistory: () => observability.alarms.history(),
    listeners: () => {
      const mqtt = parts.listeners().map((l): ListenerRecord => {
        const closed = l.gate.counters.closed
        const kicked = tracking.kicked(l.id)
        return {
          protocol: l.protocol,
          listen_on: `${l.address.host}:${l.address.port}`,
          acceptors: l.acceptors,
          max_conns: l.gate.maxConnections,
          current_conns: l.gate.counters.current,
          shutdown_count: closed === 0 && kicked === 0 ? [] : { closed, kicked }
        }
      })
      return [...mqtt, ...parts.plugins()?.listenerRecords() ?? []]
    },
    health: ({ readiness = false } = {}) => {
      const more: string[] = []
      const cluster = context.cluster()
      // readiness also asks that a cluster node still reaches the others
      if (readiness && cluster?.enabled === true && !cluster.linked()) more.push('cluster_unavailable')
      return healthOf(parts.lifecycle.state, { storeAvailable: parts.storeAvailable(), more })
    }
  }
}
