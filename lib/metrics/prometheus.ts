// The Prometheus exposition text of one node, with prom-client on a registry
// of its own (never the global one). Every metric of SPEC §2.11 is a counter
// `broker_<key with / as _>_total` (`messages/received` →
// `broker_messages_received_total`), every statistic of §2.12 two gauges
// (`connections/count` → `broker_connections_count`, `broker_connections_max`),
// and the process figures (`broker_process_*`, `broker_uptime_seconds`,
// `broker_alarms_active`) are gauges, CPU seconds counters. Each sample carries the label `node`.
// Values are read once per scrape (one snapshot of the counters), never
// pushed: nothing here runs on the message path. prom-client's default
// metrics are not used: they start observers that cannot be stopped.
import { Counter, Gauge, Registry } from 'prom-client'
import type { V3Metrics } from './metrics.js'
import { METRIC_KEYS } from './metrics.js'
import type { V3Stats } from './stats.js'
import { STAT_NAMES } from './stats.js'

export interface ProcessFigures {
  residentMemory: number
  heapUsed: number
  heapTotal: number
  externalMemory: number
  cpuUserSeconds: number
  cpuSystemSeconds: number
  openFds: number
  maxFds: number
  startTimeSeconds: number
  uptimeSeconds: number
  alarmsActive: number
}

export interface PrometheusSources {
  node: string
  metrics: () => V3Metrics
  /** the keys plugins count (in `metrics()` too), with their help text */
  pluginMetrics: () => ReadonlyMap<string, string>
  stats: () => V3Stats
  process: () => Promise<ProcessFigures>
}

/** `messages/qos2/received` → `broker_messages_qos2_received_total` */
export function metricName (key: string): string {
  return `broker_${key.replaceAll(/[/.]/g, '_')}_total`
}

/** `sessions/persistent/count` → `broker_sessions_persistent_count` */
export function statName (key: string): string {
  return `broker_${key.replaceAll('/', '_')}`
}

/** process figures: counters when the name ends in _total, gauges otherwise */
const PROCESS_FIGURES: Array<[keyof ProcessFigures, string, string]> = [
  ['residentMemory', 'broker_process_resident_memory_bytes', 'Resident memory of the broker process in bytes'],
  ['heapUsed', 'broker_process_heap_used_bytes', 'JavaScript heap in use in bytes'],
  ['heapTotal', 'broker_process_heap_total_bytes', 'JavaScript heap allocated in bytes'],
  ['externalMemory', 'broker_process_external_memory_bytes', 'Memory held outside the JavaScript heap (buffers) in bytes'],
  ['cpuUserSeconds', 'broker_process_cpu_user_seconds_total', 'User CPU time of the broker process in seconds'],
  ['cpuSystemSeconds', 'broker_process_cpu_system_seconds_total', 'System CPU time of the broker process in seconds'],
  ['openFds', 'broker_process_open_fds', 'Open file descriptors'],
  ['maxFds', 'broker_process_max_fds', 'Soft limit on open file descriptors'],
  ['startTimeSeconds', 'broker_process_start_time_seconds', 'When the node started, in seconds since the epoch'],
  ['uptimeSeconds', 'broker_uptime_seconds', 'Seconds since the node started'],
  ['alarmsActive', 'broker_alarms_active', 'Alarms raised and not cleared']
]

export class PrometheusExporter {
  readonly registry = new Registry()
  #metrics: V3Metrics | null = null
  #stats: V3Stats | null = null
  #process: ProcessFigures | null = null
  readonly #pluginKeys = new Set<string>()

  constructor (private readonly sources: PrometheusSources) {
    this.registry.setDefaultLabels({ node: sources.node })
    // collect() runs with `this` = the prom-client metric; these read the snapshot
    const metrics = (): V3Metrics | null => this.#metrics
    const stats = (): V3Stats | null => this.#stats
    const figures = (): ProcessFigures | null => this.#process
    for (const key of METRIC_KEYS) {
      // a counter cannot be set: the snapshot value is the increment from a reset
      this.registry.registerMetric(new Counter({
        name: metricName(key),
        help: `Metric ${key} (SPEC 2.11)`,
        registers: [],
        collect () { this.reset(); this.inc(metrics()?.[key] ?? 0) }
      }))
    }
    for (const name of STAT_NAMES) {
      for (const part of ['count', 'max'] as const) {
        const key = `${name}/${part}` as keyof V3Stats
        this.registry.registerMetric(new Gauge({
          name: statName(key),
          help: `Statistic ${key} (SPEC 2.12)`,
          registers: [],
          collect () { this.set(stats()?.[key] ?? 0) }
        }))
      }
    }
    for (const [field, name, help] of PROCESS_FIGURES) {
      this.registry.registerMetric(name.endsWith('_total')
        ? new Counter({ name, help, registers: [], collect () { this.reset(); this.inc(figures()?.[field] ?? 0) } })
        : new Gauge({ name, help, registers: [], collect () { this.set(figures()?.[field] ?? 0) } }))
    }
  }

  /** Registers the counters plugins added since the last exposition, and drops those of unloaded plugins. */
  #followPluginMetrics (): void {
    const wanted = this.sources.pluginMetrics()
    for (const key of this.#pluginKeys) {
      if (!wanted.has(key)) {
        this.registry.removeSingleMetric(metricName(key))
        this.#pluginKeys.delete(key)
      }
    }
    const metrics = (): V3Metrics | null => this.#metrics
    for (const [key, help] of wanted) {
      if (this.#pluginKeys.has(key)) continue
      this.#pluginKeys.add(key)
      this.registry.registerMetric(new Counter({
        name: metricName(key),
        help,
        registers: [],
        collect () { this.reset(); this.inc((metrics() as Record<string, number> | null)?.[key] ?? 0) }
      }))
    }
  }

  get contentType (): string {
    return this.registry.contentType
  }

  /** The exposition text, from one snapshot of every value. */
  async text (): Promise<string> {
    this.#followPluginMetrics()
    this.#metrics = this.sources.metrics()
    this.#stats = this.sources.stats()
    this.#process = await this.sources.process()
    return await this.registry.metrics()
  }
}
