// The system monitor (EMQ X `sysmon`), with Node.js meanings. Each warning
// is logged and published as readable text to `$SYS/brokers/<node>/sysmon/<kind>`;
// the same warning (kind, and client for busy_port) is repeated at most once
// per REPEAT_MS. Thresholds are read live; 0 switches a kind off.
// - long_gc: a garbage collection pause longer than sysmon.long_gc
//   (perf_hooks PerformanceObserver, entry type `gc`).
// - long_schedule: the event loop blocked longer than sysmon.long_schedule,
//   seen by a timer drift check: a timer every half threshold (50 ms to 1 s)
//   that finds more than its period + the threshold since its previous run
//   reports at once, so a block of 1.5 thresholds or more is always reported.
//   Not a shorter period: on this kind of VM each wake-up of an idle node
//   costs about 150 µs of CPU, and a timer every 50 ms raised the p99 latency
//   of a 1 000 msg/s stream by about a third. (Not monitorEventLoopDelay:
//   resetting its histogram forgets the next delay, and it wakes every 10 ms.)
// - large_heap: JavaScript heap in use above sysmon.large_heap.
// - busy_port: a client socket with more than sysmon.busy_port bytes waiting
//   to be written at two checks in a row.
// - busy_dist_port: the cluster link backed up. Nothing here can see it: the
//   cluster calls `reportDistPort(bytes)` with the bytes waiting on a link to
//   another node (e.g. its socket's writableLength) whenever it writes or
//   checks, and this reports it when above sysmon.busy_dist_port.
// large_heap and busy_port are checked every CHECK_MS and on `check()`;
// long_gc and long_schedule report as they happen. Every timer is unref'd.
import { PerformanceObserver, performance, type PerformanceEntry } from 'node:perf_hooks'
import type { Config } from '../config/store.js'
import type { Logger } from '../log.js'
import { gcKind } from '../plugin-kit/runtime.js'

export type SysmonKind = 'long_gc' | 'long_schedule' | 'large_heap' | 'busy_port' | 'busy_dist_port'

/** A client connection as the monitor sees it. */
export interface WatchedConnection { clientId: string, address: string, writableLength: number }

export type SysmonPublisher = (kind: SysmonKind, text: string) => void

const CHECK_MS = 1000
const DRIFT_MIN_MS = 50
const DRIFT_MAX_MS = 1000
const REPEAT_MS = 30_000

const mb = (bytes: number): string => `${Math.round(bytes / 1048576 * 10) / 10} MB`

export class SysMon {
  #timer: NodeJS.Timeout | null = null
  #gc: PerformanceObserver | null = null
  #drift: NodeJS.Timeout | null = null
  #driftMs = 0
  #lastTick = 0
  /** client ids over the busy_port threshold at the previous check */
  #busy = new Set<string>()
  readonly #reported = new Map<string, number>()
  readonly #onChange = (key: string): void => {
    if (key.startsWith('sysmon.')) this.#arm()
  }

  constructor (
    private readonly config: Config,
    private readonly logger: Logger,
    private readonly publish: SysmonPublisher,
    private readonly connections: () => Iterable<WatchedConnection>
  ) {}

  start (): void {
    this.config.on('change', this.#onChange)
    this.#arm()
    this.#timer = setInterval(() => this.check(), CHECK_MS)
    this.#timer.unref()
  }

  stop (): void {
    this.config.off('change', this.#onChange)
    if (this.#timer !== null) clearInterval(this.#timer)
    this.#timer = null
    this.#gc?.disconnect()
    this.#gc = null
    if (this.#drift !== null) clearInterval(this.#drift)
    this.#drift = null
  }

  /** How often the long_schedule timer runs (ms), null when it is off. */
  get scheduleCheckMs (): number | null {
    return this.#drift === null ? null : this.#driftMs
  }

  check (): void {
    this.#checkHeap()
    this.#checkPorts()
  }

  /** The cluster's hook: `bytes` are waiting on the link to `peer`. */
  reportDistPort (bytes: number, peer = 'another node'): void {
    const limit = this.config.get('sysmon.busy_dist_port')
    if (limit > 0 && bytes > limit) {
      this.#report('busy_dist_port', `busy_dist_port:${peer}`, `the cluster link to ${peer} has ${mb(bytes)} waiting to be written (over ${mb(limit)})`)
    }
  }

  /** Starts or stops the GC observer and the event-loop histogram as their thresholds say. */
  #arm (): void {
    if (this.config.get('sysmon.long_gc') > 0 && this.#gc === null) {
      this.#gc = new PerformanceObserver((list) => this.#onGc(list.getEntries()))
      this.#gc.observe({ entryTypes: ['gc'] })
    } else if (this.config.get('sysmon.long_gc') === 0 && this.#gc !== null) {
      this.#gc.disconnect()
      this.#gc = null
    }
    const longSchedule = this.config.get('sysmon.long_schedule')
    const driftMs = Math.min(DRIFT_MAX_MS, Math.max(DRIFT_MIN_MS, Math.floor(longSchedule / 2)))
    if (this.#drift !== null && (longSchedule === 0 || driftMs !== this.#driftMs)) {
      clearInterval(this.#drift)
      this.#drift = null
    }
    if (longSchedule > 0 && this.#drift === null) {
      this.#driftMs = driftMs
      this.#lastTick = performance.now()
      this.#drift = setInterval(() => this.#checkSchedule(), driftMs)
      this.#drift.unref()
    }
  }

  #onGc (entries: PerformanceEntry[]): void {
    const limit = this.config.get('sysmon.long_gc')
    if (limit === 0) return
    for (const entry of entries) {
      if (entry.duration <= limit) continue
      const kind = gcKind((entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind) ?? 'a'
      this.#report('long_gc', 'long_gc', `${kind} garbage collection paused the broker for ${Math.round(entry.duration)} ms (over ${limit} ms)`)
    }
  }

  #checkSchedule (): void {
    const now = performance.now()
    // at least this long nothing else could run (between one period less than it and it)
    const blocked = now - this.#lastTick - this.#driftMs
    this.#lastTick = now
    const limit = this.config.get('sysmon.long_schedule')
    if (limit > 0 && blocked > limit) {
      this.#report('long_schedule', 'long_schedule', `the event loop was blocked for ${Math.round(blocked)} ms (over ${limit} ms)`)
    }
  }

  #checkHeap (): void {
    const limit = this.config.get('sysmon.large_heap')
    if (limit === 0) return
    const used = process.memoryUsage().heapUsed
    if (used > limit) this.#report('large_heap', 'large_heap', `the JavaScript heap holds ${mb(used)} (over ${mb(limit)})`)
  }

  #checkPorts (): void {
    const limit = this.config.get('sysmon.busy_port')
    if (limit === 0) {
      this.#busy.clear()
      return
    }
    const busy = new Set<string>()
    for (const { clientId, address, writableLength } of this.connections()) {
      if (writableLength <= limit) continue
      busy.add(clientId)
      if (this.#busy.has(clientId)) {
        this.#report('busy_port', `busy_port:${clientId}`,
          `client ${clientId} (${address}) has ${mb(writableLength)} waiting to be written (over ${mb(limit)}): it is not reading`)
      }
    }
    this.#busy = busy
  }

  #report (kind: SysmonKind, key: string, text: string): void {
    const now = Date.now()
    const last = this.#reported.get(key)
    if (last !== undefined && now - last < REPEAT_MS) return
    this.#reported.set(key, now)
    if (this.#reported.size > 10_000) this.#reported.clear()
    this.logger.warn({ sysmon: kind }, text)
    this.publish(kind, `${kind}: ${text}`)
  }
}
