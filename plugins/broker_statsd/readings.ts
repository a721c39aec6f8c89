// What one push sends: the node's metrics (SPEC §2.11) as counters — the
// increment since the previous push —, its statistics (§2.12) as gauges,
// and the runtime's figures under `vm.`: memory, event-loop delay and
// utilization, load averages and active handles as gauges, CPU time and
// garbage collections as counters.
import { loadavg } from 'node:os'
import { performance, type EventLoopUtilization } from 'node:perf_hooks'
import type { EventLoopProbe, GcProbe, NodeQueries } from '../../lib/plugin-kit/index.js'

export interface Line { name: string, type: 'c' | 'g', value: number }

/** `messages/received` → `messages.received`: StatsD names separate their levels with dots. */
export function statName (key: string): string {
  return key.replaceAll('/', '.').replace(/[^A-Za-z0-9_.-]/g, '_')
}

const round3 = (n: number): number => Math.round(n * 1000) / 1000

/** Counters kept between pushes: what each was at the previous one. */
export class Increments {
  readonly #last = new Map<string, number>()

  /** `start`: the values the first increments count from (the counters when the plugin loaded). */
  constructor (start: Readonly<Record<string, number>> = {}) {
    for (const [key, value] of Object.entries(start)) this.#last.set(key, value)
  }

  /**
   * The increment of each counter since the previous call. A counter that is
   * new counts from 0; one that went down started again (a plugin's counter
   * after a reload), so all of it is new; one that is gone is forgotten.
   */
  take (now: Readonly<Record<string, number>>): Array<[string, number]> {
    const out: Array<[string, number]> = []
    for (const [key, value] of Object.entries(now)) {
      const before = this.#last.get(key) ?? 0
      out.push([key, value >= before ? round3(value - before) : value])
    }
    for (const key of this.#last.keys()) if (!(key in now)) this.#last.delete(key)
    for (const [key, value] of Object.entries(now)) this.#last.set(key, value)
    return out
  }
}

export class Readings {
  readonly #metrics: Increments
  readonly #vm: Increments
  #elu: EventLoopUtilization = performance.eventLoopUtilization()

  constructor (private readonly node: NodeQueries, private readonly loop: EventLoopProbe, private readonly gc: GcProbe) {
    this.#metrics = new Increments(node.metrics())
    this.#vm = new Increments(this.#vmCounters())
  }

  /** The lines of one push; the event-loop figures start a new interval. */
  take (): Line[] {
    const lines: Line[] = []
    for (const [key, value] of this.#metrics.take(this.node.metrics())) lines.push({ name: statName(key), type: 'c', value })
    for (const [key, value] of Object.entries(this.node.stats())) lines.push({ name: statName(key), type: 'g', value })
    for (const [key, value] of this.#vm.take(this.#vmCounters())) lines.push({ name: key, type: 'c', value })
    for (const [key, value] of Object.entries(this.#vmGauges())) lines.push({ name: key, type: 'g', value })
    return lines
  }

  #vmCounters (): Record<string, number> {
    const cpu = process.cpuUsage()
    const gc = this.gc.read().total
    return {
      'vm.cpu.user_ms': cpu.user / 1000,
      'vm.cpu.system_ms': cpu.system / 1000,
      'vm.gc.count': gc.count,
      'vm.gc.pause_ms': gc.pause_ms
    }
  }

  #vmGauges (): Record<string, number> {
    const memory = process.memoryUsage()
    const delay = this.loop.read()
    this.loop.reset()
    const elu = performance.eventLoopUtilization(this.#elu)
    this.#elu = performance.eventLoopUtilization()
    const [load1, load5, load15] = loadavg()
    return {
      'vm.memory.rss': memory.rss,
      'vm.memory.heap_total': memory.heapTotal,
      'vm.memory.heap_used': memory.heapUsed,
      'vm.memory.external': memory.external,
      'vm.memory.array_buffers': memory.arrayBuffers,
      'vm.event_loop.delay.mean_ms': delay.mean_ms,
      'vm.event_loop.delay.p50_ms': delay.p50_ms,
      'vm.event_loop.delay.p99_ms': delay.p99_ms,
      'vm.event_loop.delay.max_ms': delay.max_ms,
      'vm.event_loop.utilization': round3(elu.utilization),
      'vm.load1': round3(load1),
      'vm.load5': round3(load5),
      'vm.load15': round3(load15),
      'vm.handles': process.getActiveResourcesInfo().length
    }
  }
}
