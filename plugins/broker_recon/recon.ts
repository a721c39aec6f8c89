// One load's diagnostics: the figures of figures.ts, the event-loop and GC
// probes made at load, node_stats sampling and the heap snapshot. The ctl
// command (command.ts) and the API route (route.ts) both answer from here.
import { performance } from 'node:perf_hooks'
import type { ClientLoadFacts, EventLoopDelay, EventLoopProbe, GcFigures, GcProbe, NodeQueries, PluginContext } from '../../lib/plugin-kit/index.js'
import { allocated, binLeak, memory, portTypes, top, TOP_ATTRIBUTES, type BinLeakFacts, type HeapSpaceFacts, type MemoryFacts, type PortTypeFacts, type TopAttribute } from './figures.js'
import { SnapshotRefused, writeHeapSnapshot, type SnapshotFacts } from './heap-snapshot.js'
import { nodeStats, type NodeStatsSample } from './node-stats.js'

export interface EventLoopFacts {
  /** ms since the epoch: the figures count from the plugin's load */
  since: number
  delay: EventLoopDelay
  /** the share of the time since then the event loop was busy, 0..1 */
  utilization: number
}

export type GcFacts = GcFigures & { since: number }

/** Everything at once: what GET /api/v3/nodes/{node}/recon answers. */
export interface ReconFacts {
  node: string
  memory: MemoryFacts
  allocated: HeapSpaceFacts[]
  bin_leak: BinLeakFacts
  event_loop: EventLoopFacts
  gc: GcFacts
  port_types: PortTypeFacts[]
  top: Record<TopAttribute, ClientLoadFacts[]>
  node_stats?: NodeStatsSample[]
}

export interface ReconParts {
  node: NodeQueries
  dataDir: string
  loop: EventLoopProbe
  gc: GcProbe
  /** whether `recon heapsnapshot` may run (recon.heapsnapshot) */
  snapshots: boolean
  timers: PluginContext<unknown>['timers']
}

export class Recon {
  readonly #since = Date.now()
  readonly #elu = performance.eventLoopUtilization()
  /** the waits of node_stats samplings under way: each fails when the plugin unloads */
  readonly #waits = new Set<() => void>()
  #snapshot: Promise<unknown> | undefined
  #stopped = false

  constructor (private readonly parts: ReconParts) {}

  memory (): MemoryFacts {
    return memory()
  }

  allocated (): HeapSpaceFacts[] {
    return allocated()
  }

  binLeak (count: number): BinLeakFacts {
    return binLeak(this.parts.node.clientLoad(), count)
  }

  eventLoop (): EventLoopFacts {
    return { since: this.#since, delay: this.parts.loop.read(), utilization: Math.round(performance.eventLoopUtilization(this.#elu).utilization * 1000) / 1000 }
  }

  gc (): GcFacts {
    return { since: this.#since, ...this.parts.gc.read() }
  }

  portTypes (): PortTypeFacts[] {
    return portTypes()
  }

  procCount (by: TopAttribute, count: number): ClientLoadFacts[] {
    return top(this.parts.node.clientLoad(), by, count)
  }

  async nodeStats (samples: number, intervalMs: number): Promise<NodeStatsSample[]> {
    return await nodeStats(this.parts.node, this.parts.gc, samples, intervalMs, async (ms) => await this.#pause(ms))
  }

  async heapSnapshot (file: string): Promise<SnapshotFacts> {
    if (!this.parts.snapshots) throw new SnapshotRefused('heap snapshots are off (recon.heapsnapshot = off)')
    if (this.#snapshot !== undefined) throw new SnapshotRefused('a heap snapshot is being written; try again when it is done')
    const writing = writeHeapSnapshot(this.parts.dataDir, file)
    this.#snapshot = writing
    try {
      return await writing
    } finally {
      this.#snapshot = undefined
    }
  }

  async all (count: number, sampling?: { samples: number, intervalMs: number }): Promise<ReconFacts> {
    const clients = this.parts.node.clientLoad()
    const facts: ReconFacts = {
      node: this.parts.node.name,
      memory: this.memory(),
      allocated: this.allocated(),
      bin_leak: binLeak(clients, count),
      event_loop: this.eventLoop(),
      gc: this.gc(),
      port_types: this.portTypes(),
      top: Object.fromEntries(TOP_ATTRIBUTES.map((by) => [by, top(clients, by, count)])) as Record<TopAttribute, ClientLoadFacts[]>
    }
    if (sampling !== undefined) facts.node_stats = await this.nodeStats(sampling.samples, sampling.intervalMs)
    return facts
  }

  /** At unload: samplings under way end (their waits fail), a snapshot being written is waited for. */
  async stop (): Promise<void> {
    this.#stopped = true
    for (const fail of this.#waits) fail()
    this.#waits.clear()
    await this.#snapshot?.catch(() => {})
  }

  async #pause (ms: number): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      if (this.#stopped) {
        reject(new Error('broker_recon is unloading'))
        return
      }
      const fail = (): void => {
        timer.cancel()
        reject(new Error('broker_recon was unloaded during the sampling'))
      }
      const timer = this.parts.timers.setTimeout(() => {
        this.#waits.delete(fail)
        resolve()
      }, ms)
      this.#waits.add(fail)
    })
  }
}
