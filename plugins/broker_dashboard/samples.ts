// The overview's charts: every `dashboard.sample_interval` the plugin asks
// every live node of the cluster for its message counters, connections and
// subscriptions, and keeps per node the last hour of samples (rates per
// second over the interval) in memory: at most ceil(3600 s / interval)
// samples a node, a node's series dropped when it leaves the cluster. The
// first reading of a node is the baseline of its rates, not a sample.
import type { NodeOutcome } from '../../lib/plugin-kit/admin.js'

const HOUR_MS = 3_600_000

export interface Sample {
  /** ms since the epoch */
  ts: number
  received_per_s: number
  sent_per_s: number
  connections: number
  subscriptions: number
}

/** One reading of a node: its counters now. */
export interface Reading { ts: number, received: number, sent: number, connections: number, subscriptions: number }

interface Series { last: Reading, samples: Sample[] }

export class SampleStore {
  readonly #series = new Map<string, Series>()

  constructor (readonly intervalMs: number) {}

  /** how many samples a node keeps: its last hour */
  get capacity (): number {
    return Math.ceil(HOUR_MS / this.intervalMs)
  }

  add (node: string, reading: Reading): void {
    const series = this.#series.get(node)
    if (series === undefined) {
      this.#series.set(node, { last: reading, samples: [] })
      return
    }
    const seconds = (reading.ts - series.last.ts) / 1000
    if (seconds <= 0) return
    // a counter that went down restarted (the node restarted): no rate for this interval
    const rate = (now: number, before: number): number => now >= before ? round((now - before) / seconds) : 0
    series.samples.push({
      ts: reading.ts,
      received_per_s: rate(reading.received, series.last.received),
      sent_per_s: rate(reading.sent, series.last.sent),
      connections: reading.connections,
      subscriptions: reading.subscriptions
    })
    if (series.samples.length > this.capacity) series.samples.splice(0, series.samples.length - this.capacity)
    series.last = reading
  }

  /** the node's samples of the last hour, oldest first */
  samples (node: string): Sample[] {
    return [...this.#series.get(node)?.samples ?? []]
  }

  /** drops the series of every node not in `live` */
  keepOnly (live: readonly string[]): void {
    for (const node of [...this.#series.keys()]) if (!live.includes(node)) this.#series.delete(node)
  }

  forget (node: string): void {
    this.#series.delete(node)
  }

  clear (): void {
    this.#series.clear()
  }
}

function round (value: number): number {
  return Math.round(value * 100) / 100
}

type Counters = Record<string, number>

/** A node's reading from its `metrics` and `stats` answers. */
export function readingOf (ts: number, metrics: Counters, stats: Counters): Reading {
  return {
    ts,
    received: metrics['messages/received'] ?? 0,
    sent: metrics['messages/sent'] ?? 0,
    connections: stats['connections/count'] ?? 0,
    subscriptions: stats['subscriptions/count'] ?? 0
  }
}

/** Each node's answer, by node, for the nodes that answered. */
export function answered<T> (outcomes: Array<NodeOutcome<T>>): Map<string, T> {
  return new Map(outcomes.flatMap((outcome) => outcome.ok ? [[outcome.node, outcome.value] as const] : []))
}
