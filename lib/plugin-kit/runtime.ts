// Figures of the Node.js runtime that diagnostic plugins read (broker_recon,
// broker_statsd): the event-loop delay histogram and the garbage
// collections. Each probe is made by a plugin's load and stopped by it
// (`ctx.onUnload(probe.stop)`); `stop` may run twice.
import { constants, monitorEventLoopDelay, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks'

const NS_PER_MS = 1e6
const round3 = (n: number): number => Math.round(n * 1000) / 1000

/**
 * The event-loop delay in milliseconds over the samples taken: how much
 * later than asked a timer of `resolution_ms` ran (the histogram of
 * perf_hooks' monitorEventLoopDelay records the whole interval; the
 * resolution is taken off, so an idle loop reads about 0).
 */
export interface EventLoopDelay {
  resolution_ms: number
  samples: number
  min_ms: number
  mean_ms: number
  stddev_ms: number
  max_ms: number
  p50_ms: number
  p90_ms: number
  p99_ms: number
  p999_ms: number
}

export interface EventLoopProbe {
  read: () => EventLoopDelay
  /** forget the samples so far (a new interval starts) */
  reset: () => void
  stop: () => void
}

export function eventLoopProbe (resolutionMs: number): EventLoopProbe {
  const histogram = monitorEventLoopDelay({ resolution: resolutionMs })
  histogram.enable()
  const late = (ns: number): number => round3(Math.max(0, ns / NS_PER_MS - resolutionMs))
  return {
    read: () => {
      const samples = histogram.count
      if (samples === 0) return { resolution_ms: resolutionMs, samples, min_ms: 0, mean_ms: 0, stddev_ms: 0, max_ms: 0, p50_ms: 0, p90_ms: 0, p99_ms: 0, p999_ms: 0 }
      return {
        resolution_ms: resolutionMs,
        samples,
        min_ms: late(histogram.min),
        mean_ms: late(histogram.mean),
        stddev_ms: round3(histogram.stddev / NS_PER_MS),
        max_ms: late(histogram.max),
        p50_ms: late(histogram.percentile(50)),
        p90_ms: late(histogram.percentile(90)),
        p99_ms: late(histogram.percentile(99)),
        p999_ms: late(histogram.percentile(99.9))
      }
    },
    reset: () => histogram.reset(),
    stop: () => histogram.disable()
  }
}

export type GcKind = 'minor' | 'major' | 'incremental' | 'weakcb'
export interface GcTotals { count: number, pause_ms: number, max_pause_ms: number }
export interface GcFigures { total: GcTotals, by_kind: Record<GcKind, GcTotals> }

/** perf_hooks' `detail.kind` codes of a gc entry */
const GC_KINDS: ReadonlyArray<readonly [number, GcKind]> = Object.freeze([
  [constants.NODE_PERFORMANCE_GC_MINOR, 'minor'],
  [constants.NODE_PERFORMANCE_GC_MAJOR, 'major'],
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL, 'incremental'],
  [constants.NODE_PERFORMANCE_GC_WEAKCB, 'weakcb']
] as const)

/** The kind of a gc entry, from its perf_hooks `detail.kind` code. */
export function gcKind (code: number | undefined): GcKind | undefined {
  for (const [value, kind] of GC_KINDS) if (code === value) return kind
  return undefined
}

export interface GcProbe {
  /** the collections seen since the probe was made (a copy) */
  read: () => GcFigures
  stop: () => void
}

const zero = (): GcTotals => ({ count: 0, pause_ms: 0, max_pause_ms: 0 })

function add (totals: GcTotals, ms: number): void {
  totals.count++
  totals.pause_ms += ms
  if (ms > totals.max_pause_ms) totals.max_pause_ms = ms
}

/** Counts the garbage collections and their pauses (perf_hooks `gc` entries, delivered after the fact). */
export function gcProbe (): GcProbe {
  const figures: GcFigures = { total: zero(), by_kind: { minor: zero(), major: zero(), incremental: zero(), weakcb: zero() } }
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const code = (entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind ?? 0
      add(figures.total, entry.duration)
      const kind = gcKind(code)
      if (kind !== undefined) add(figures.by_kind[kind], entry.duration)
    }
  })
  observer.observe({ entryTypes: ['gc'] })
  const copy = (t: GcTotals): GcTotals => ({ count: t.count, pause_ms: round3(t.pause_ms), max_pause_ms: round3(t.max_pause_ms) })
  return {
    read: () => ({
      total: copy(figures.total),
      by_kind: { minor: copy(figures.by_kind.minor), major: copy(figures.by_kind.major), incremental: copy(figures.by_kind.incremental), weakcb: copy(figures.by_kind.weakcb) }
    }),
    stop: () => observer.disconnect()
  }
}
