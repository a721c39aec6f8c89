// `recon node_stats [<N> [<Ms>]]`: EMQ X's `recon:node_stats_print(N, Ms)`,
// N samples Ms apart. Each holds the state at its end (connections,
// handles, memory) and what happened during its interval (bytes and
// messages in and out, garbage collections, CPU time, how busy and how late
// the event loop was) — the counterparts of recon's process count, run
// queue, memory, bytes_in/out, gc_count, reductions and scheduler usage.
import { performance } from 'node:perf_hooks'
import { eventLoopProbe, type GcProbe, type NodeQueries } from '../../lib/plugin-kit/index.js'

export interface NodeStatsSample {
  /** ms since the epoch, the end of the interval */
  at: number
  interval_ms: number
  connections: number
  handles: number
  memory_total: number
  memory_heap: number
  memory_external: number
  bytes_in: number
  bytes_out: number
  messages_in: number
  messages_out: number
  gc_count: number
  gc_pause_ms: number
  cpu_user_ms: number
  cpu_system_ms: number
  /** the share of the interval the event loop was busy, 0..1 */
  event_loop_utilization: number
  /** ms a 10 ms timer ran late, at most, over the interval */
  event_loop_delay_max_ms: number
}

export const NODE_STATS_LIMITS = Object.freeze({ maxSamples: 60, minIntervalMs: 100, maxIntervalMs: 10_000, maxTotalMs: 55_000 })

/** Why these sample counts and intervals are refused; undefined when they are fine. */
export function nodeStatsRefusal (samples: number, intervalMs: number): string | undefined {
  const { maxSamples, minIntervalMs, maxIntervalMs, maxTotalMs } = NODE_STATS_LIMITS
  if (!Number.isInteger(samples) || samples < 1 || samples > maxSamples) return `the number of samples must be 1 to ${maxSamples}`
  if (!Number.isInteger(intervalMs) || intervalMs < minIntervalMs || intervalMs > maxIntervalMs) return `the interval must be ${minIntervalMs} to ${maxIntervalMs} ms`
  if (samples * intervalMs > maxTotalMs) return `samples × interval must be at most ${maxTotalMs / 1000} s (broker_ctl waits 60 s)`
  return undefined
}

const DELAY_RESOLUTION_MS = 10
const round3 = (n: number): number => Math.round(n * 1000) / 1000

interface Counts { bytesIn: number, bytesOut: number, messagesIn: number, messagesOut: number, gcCount: number, gcPause: number, cpu: NodeJS.CpuUsage }

function counts (node: NodeQueries, gc: GcProbe): Counts {
  const m = node.metrics()
  const g = gc.read().total
  return { bytesIn: m['bytes/received'], bytesOut: m['bytes/sent'], messagesIn: m['messages/received'], messagesOut: m['messages/sent'], gcCount: g.count, gcPause: g.pause_ms, cpu: process.cpuUsage() }
}

/**
 * Takes the samples; `pause(ms)` waits (and rejects when the plugin
 * unloads, which ends the sampling). The delay histogram is this call's own.
 */
export async function nodeStats (node: NodeQueries, gc: GcProbe, samples: number, intervalMs: number, pause: (ms: number) => Promise<void>): Promise<NodeStatsSample[]> {
  const loop = eventLoopProbe(DELAY_RESOLUTION_MS)
  try {
    const out: NodeStatsSample[] = []
    let before = counts(node, gc)
    let elu = performance.eventLoopUtilization()
    for (let i = 0; i < samples; i++) {
      await pause(intervalMs)
      const now = counts(node, gc)
      const busy = performance.eventLoopUtilization(elu)
      elu = performance.eventLoopUtilization()
      const memory = process.memoryUsage()
      out.push({
        at: Date.now(),
        interval_ms: intervalMs,
        connections: node.stats()['connections/count'],
        handles: process.getActiveResourcesInfo().length,
        memory_total: memory.rss,
        memory_heap: memory.heapUsed,
        memory_external: memory.external,
        bytes_in: now.bytesIn - before.bytesIn,
        bytes_out: now.bytesOut - before.bytesOut,
        messages_in: now.messagesIn - before.messagesIn,
        messages_out: now.messagesOut - before.messagesOut,
        gc_count: now.gcCount - before.gcCount,
        gc_pause_ms: round3(now.gcPause - before.gcPause),
        cpu_user_ms: round3((now.cpu.user - before.cpu.user) / 1000),
        cpu_system_ms: round3((now.cpu.system - before.cpu.system) / 1000),
        event_loop_utilization: round3(busy.utilization),
        event_loop_delay_max_ms: loop.read().max_ms
      })
      loop.reset()
      before = now
    }
    return out
  } finally {
    loop.stop()
  }
}
