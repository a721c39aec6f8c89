// The periodic $SYS topics (SPEC §6, EMQ X emqx_sys), under
// `$SYS/brokers/<node.name>/`:
// - every second: `uptime` (`2 minutes, 5 seconds`) and `datetime`
//   (`YYYY-MM-DD HH:MM:SS`), QoS 0, not retained;
// - at start and every `mqtt.broker.sys_interval` (read live; 0 = never):
//   `version`, `sysdescr` and `$SYS/brokers` (the cluster's node names,
//   comma-separated) retained; `stats/<name>` and `metrics/<name>` as plain
//   decimal text, QoS 0, not retained.
import type { Config } from '../config/store.js'
import type { V3Metrics } from '../metrics/metrics.js'
import type { V3Stats } from '../metrics/stats.js'
import { LiveTimer } from './live-timer.js'
import { SYSDESCR, VERSION, uptimeText } from './node-info.js'
import { specTime } from '../timestamps.js'

export type SysPublish = (topic: string, payload: string, qos: 0 | 1 | 2, retain: boolean) => void

export interface SysSources {
  startedAt: number
  /** the cluster's node names (this node alone until the cluster issue) */
  nodes: () => string[]
  metrics: () => V3Metrics
  stats: () => V3Stats
}

const HEARTBEAT_MS = 1000

/** `$SYS/brokers/<node>/` */
export function sysPrefix (config: Config): string {
  return `$SYS/brokers/${config.get('node.name')}/`
}

export class SysTopics {
  #heartbeat: NodeJS.Timeout | null = null
  readonly #interval: LiveTimer

  constructor (private readonly config: Config, private readonly publish: SysPublish, private readonly sources: SysSources) {
    this.#interval = new LiveTimer(config, 'mqtt.broker.sys_interval', () => this.tick())
  }

  start (): void {
    this.tick()
    this.heartbeat()
    this.#heartbeat = setInterval(() => this.heartbeat(), HEARTBEAT_MS)
    this.#heartbeat.unref()
    this.#interval.start()
  }

  stop (): void {
    if (this.#heartbeat !== null) clearInterval(this.#heartbeat)
    this.#heartbeat = null
    this.#interval.stop()
  }

  heartbeat (): void {
    const prefix = sysPrefix(this.config)
    this.publish(`${prefix}uptime`, uptimeText(Date.now() - this.sources.startedAt), 0, false)
    this.publish(`${prefix}datetime`, specTime(), 0, false)
  }

  /** `$SYS/brokers`: the cluster's live nodes (again whenever they change). */
  brokers (): void {
    this.publish('$SYS/brokers', this.sources.nodes().join(','), 0, true)
  }

  tick (): void {
    const prefix = sysPrefix(this.config)
    this.brokers()
    this.publish(`${prefix}version`, VERSION, 0, true)
    this.publish(`${prefix}sysdescr`, SYSDESCR, 0, true)
    for (const [name, value] of Object.entries(this.sources.stats())) this.publish(`${prefix}stats/${name}`, String(value), 0, false)
    for (const [name, value] of Object.entries(this.sources.metrics())) this.publish(`${prefix}metrics/${name}`, String(value), 0, false)
  }
}
