// What the runtime says about itself, read when asked: memory (EMQ X's
// `recon_alloc:memory`), the V8 heap spaces (`recon_alloc` allocators),
// binary memory outside the heap (`recon:bin_leak`), the active handles by
// type (`recon:port_types`), and the top clients (`recon:proc_count`,
// `recon:inet_count`) from the node's client figures.
import { getHeapSpaceStatistics, getHeapStatistics } from 'node:v8'
import type { ClientLoadFacts } from '../../lib/plugin-kit/index.js'

/** bytes, but `usage` (heap used / heap total) and the context counts */
export interface MemoryFacts {
  rss: number
  heap_total: number
  heap_used: number
  external: number
  array_buffers: number
  /** the most the heap may grow to (--max-old-space-size) */
  heap_limit: number
  /** what the heap may still take before heap_limit */
  heap_available: number
  /** memory V8 took with malloc (outside the heap spaces), now and at most */
  malloced: number
  peak_malloced: number
  native_contexts: number
  /** contexts no longer used but not yet collected: more than 0 for long is a leak */
  detached_contexts: number
  usage: number
}

/** One V8 heap space, bytes (EMQ X's allocator types). */
export interface HeapSpaceFacts { space: string, size: number, used: number, available: number, physical: number }

/** Binary data outside the JavaScript heap, and the clients holding the most of it. */
export interface BinLeakFacts { external: number, array_buffers: number, clients: ClientLoadFacts[] }

export interface PortTypeFacts { type: string, count: number }

/** What the top lists rank by: a number of ClientLoadFacts. */
export const TOP_ATTRIBUTES = Object.freeze(['mqueue_len', 'inflight_len', 'awaiting_rel_len', 'heap_size', 'buffered', 'recv_oct', 'send_oct'] as const)
export type TopAttribute = typeof TOP_ATTRIBUTES[number]

/** EMQ X's `recon:proc_count` attributes that have a counterpart here. */
const ALIASES: Readonly<Record<string, TopAttribute>> = Object.freeze({ message_queue_len: 'mqueue_len', memory: 'heap_size', binary_memory: 'buffered' })

export function topAttribute (name: string): TopAttribute | undefined {
  if ((TOP_ATTRIBUTES as readonly string[]).includes(name)) return name as TopAttribute
  return Object.hasOwn(ALIASES, name) ? ALIASES[name] : undefined
}

export function memory (): MemoryFacts {
  const usage = process.memoryUsage()
  const heap = getHeapStatistics()
  return {
    rss: usage.rss,
    heap_total: usage.heapTotal,
    heap_used: usage.heapUsed,
    external: usage.external,
    array_buffers: usage.arrayBuffers,
    heap_limit: heap.heap_size_limit,
    heap_available: heap.total_available_size,
    malloced: heap.malloced_memory,
    peak_malloced: heap.peak_malloced_memory,
    native_contexts: heap.number_of_native_contexts,
    detached_contexts: heap.number_of_detached_contexts,
    usage: Math.round(usage.heapUsed / usage.heapTotal * 1000) / 1000
  }
}

export function allocated (): HeapSpaceFacts[] {
  return getHeapSpaceStatistics().map((s) => ({
    space: s.space_name,
    size: s.space_size,
    used: s.space_used_size,
    available: s.space_available_size,
    physical: s.physical_space_size
  }))
}

/** The `count` clients with the most `by`, most first (ties by client id); clients with 0 are left out. */
export function top (clients: readonly ClientLoadFacts[], by: TopAttribute, count: number): ClientLoadFacts[] {
  return clients.filter((c) => c[by] > 0)
    .sort((a, b) => b[by] - a[by] || (a.client_id < b.client_id ? -1 : a.client_id > b.client_id ? 1 : 0))
    .slice(0, count)
}

export function binLeak (clients: readonly ClientLoadFacts[], count: number): BinLeakFacts {
  const { external, arrayBuffers } = process.memoryUsage()
  return { external, array_buffers: arrayBuffers, clients: top(clients, 'buffered', count) }
}

/** The handles and requests keeping the event loop alive, by type (sockets, servers, timers, file requests …), most first. */
export function portTypes (): PortTypeFacts[] {
  const counts = new Map<string, number>()
  for (const type of process.getActiveResourcesInfo()) counts.set(type, (counts.get(type) ?? 0) + 1)
  return [...counts].map(([type, count]) => ({ type, count })).sort((a, b) => b.count - a.count || (a.type < b.type ? -1 : 1))
}
