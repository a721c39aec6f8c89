// The `memory` section: bytes per idle connection on bare Aedes (unpatched),
// Mosquitto and the broker, for MQTT 3.1.1 and 5, clean and persistent
// sessions, keepalive 60. Each run: a fresh server; 100 connections opened and
// closed (so that code paths and shared structures are warm); the server's
// RSS and (Node servers) heap after two full collections; `connections` idle
// clients from the two workers; the same again. For the Node servers a heap
// snapshot is then taken, the clients close, and a second one is taken: the
// difference is charged to the parts of a connection (bench/heap-parts.ts).
// `native` is what RSS grew beyond the heap (libuv and socket handles,
// malloc, the heap's committed but unused pages).
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { envChoice } from './env.js'
import { partBytes, PARTS, readSnapshot, type Part } from './heap-parts.js'
import { Worker } from './pool.js'
import { connectIdle, idleWorkerCount } from './idle-split.js'
import { onPath, ROOT, rssKiB, Server, type ServerKind } from './servers.js'

export const MEMORY_SECTION = 'memory'

export const MEMORY_VARIANTS = [
  { name: 'v3.1.1 clean', protocolVersion: 4, clean: true },
  { name: 'v3.1.1 persistent', protocolVersion: 4, clean: false },
  { name: 'v5 clean', protocolVersion: 5, clean: true },
  { name: 'v5 persistent', protocolVersion: 5, clean: false }
] as const

export interface MemoryRun {
  connected: number
  /** RSS growth per connection, bytes */
  rssPerConn: number
  /** heap (used + external) growth per connection, bytes; Node servers only */
  heapPerConn: number | null
  /** heap snapshot growth per connection by part, bytes; Node servers with snapshots only */
  parts: Record<Part, number> | null
  /** the largest growths, `part | type:name` → bytes per connection */
  largest: Array<[string, number]>
  /** RSS after all connections, MiB */
  rssMiB: number
}

export type MemoryResults = Record<string, Partial<Record<ServerKind, MemoryRun>>>

const WARMUP_CONNECTIONS = 100
const CONNECT_TIMEOUT_MS = 600_000
const PROBE_TIMEOUT_MS = 300_000
const SETTLE_MS = 1000
const EMPTY_TIMEOUT_MS = 60_000
const KEEPALIVE = 60

const sleep = async (ms: number): Promise<void> => await new Promise((resolve) => setTimeout(resolve, ms))

interface Probe { rss: number, heap: number | null, snapshot: string | null }

/** Asks the heap probe of a Node server for a collection (and snapshot), then reads RSS; Mosquitto: RSS only. */
async function probe (server: Server, dir: string | null, seq: number, snapshot = false): Promise<Probe> {
  if (dir === null) return { rss: rssKiB(server.pid) * 1024, heap: null, snapshot: null }
  if (snapshot) writeFileSync(join(dir, `snapshot-${seq}`), '')
  server.child.kill('SIGUSR2')
  const file = join(dir, `probe-${seq}.json`)
  const deadline = Date.now() + PROBE_TIMEOUT_MS
  while (!existsSync(file)) {
    if (Date.now() > deadline) throw new Error(`${server.label}: no heap probe answer within ${PROBE_TIMEOUT_MS / 1000} s`)
    await sleep(100)
  }
  const answer = JSON.parse(readFileSync(file, 'utf8')) as { memory: NodeJS.MemoryUsage, snapshot: string | null }
  return { rss: answer.memory.rss, heap: answer.memory.heapUsed + answer.memory.external, snapshot: answer.snapshot }
}

/**
 * After the clients closed: probes until the server's heap is back within 5 %
 * of the growth the connections caused (it has let go of them), then once more
 * with a snapshot (60 s at most).
 */
async function emptied (server: Server, dir: string, baseHeap: number, fullHeap: number): Promise<Probe> {
  const deadline = Date.now() + EMPTY_TIMEOUT_MS
  for (let seq = 2; ; seq++) {
    await sleep(SETTLE_MS)
    const { heap } = await probe(server, dir, seq)
    if (heap! - baseHeap <= (fullHeap - baseHeap) * 0.05 || Date.now() > deadline) return await probe(server, dir, seq + 1, true)
  }
}

async function connectVariant (workers: Worker[], port: number, count: number, firstId: number, variant: typeof MEMORY_VARIANTS[number]): Promise<number> {
  return (await connectIdle(workers, port, count, firstId, { keepalive: KEEPALIVE, protocolVersion: variant.protocolVersion, clean: variant.clean }, CONNECT_TIMEOUT_MS)).connected
}

/** One server, one variant: the figures of MemoryRun. */
export async function measureMemory (kind: ServerKind, variant: typeof MEMORY_VARIANTS[number], connections: number, snapshots: boolean): Promise<MemoryRun> {
  const node = kind !== 'mosquitto'
  const dir = node ? mkdtempSync(join(tmpdir(), 'bench-memory-')) : null
  const server = await Server.start(kind, node
    ? {
        nodeArgs: ['--expose-gc', '--import', `file://${join(ROOT, 'dist', 'bench', 'heap-probe.js')}`],
        env: { BENCH_PROBE_DIR: dir! }
      }
    : {})
  const warm = [new Worker(0), new Worker(1)]
  const workers = Array.from({ length: idleWorkerCount(connections) }, (_, i) => new Worker(2 + i))
  try {
    await Promise.race([connectVariant(warm, server.port, WARMUP_CONNECTIONS, 1_000_000, variant), server.died])
    await Promise.all(warm.map(async (w) => await w.close()))
    await sleep(SETTLE_MS)
    const before = await Promise.race([probe(server, dir, 0), server.died])
    const connected = await Promise.race([connectVariant(workers, server.port, connections, 0, variant), server.died])
    if (connected === 0) throw new Error(`${server.label}: no connection was accepted`)
    await sleep(SETTLE_MS)
    const after = await Promise.race([probe(server, dir, 1, snapshots), server.died])
    let parts: Record<Part, number> | null = null
    let largest: Array<[string, number]> = []
    if (after.snapshot !== null) {
      await Promise.all(workers.map(async (w) => await w.close()))
      const empty = await Promise.race([emptied(server, dir!, before.heap!, after.heap!), server.died])
      const a = partBytes(readSnapshot(empty.snapshot!))
      const b = partBytes(readSnapshot(after.snapshot))
      parts = Object.fromEntries(PARTS.map((p) => [p, (b.parts[p] - a.parts[p]) / connected])) as Record<Part, number>
      largest = [...b.byName].map(([key, bytes]): [string, number] => [key, (bytes - (a.byName.get(key) ?? 0)) / connected])
        .sort((x, y) => y[1] - x[1]).slice(0, 30)
    }
    return {
      connected,
      rssPerConn: (after.rss - before.rss) / connected,
      heapPerConn: before.heap === null || after.heap === null ? null : (after.heap - before.heap) / connected,
      parts,
      largest,
      rssMiB: after.rss / 1024 / 1024
    }
  } finally {
    await Promise.all([...warm, ...workers].map(async (w) => await w.close()))
    await server.stop()
    if (dir !== null) rmSync(dir, { recursive: true, force: true })
  }
}

/** Every variant on every server; failures are pushed to `errors`. BENCH_MEMORY_VARIANTS=name,… and BENCH_MEMORY_SERVERS=bare,mosquitto,broker narrow, BENCH_MEMORY_SNAPSHOT=0 skips the snapshots. */
export async function runMemorySection (connections: number, errors: string[]): Promise<MemoryResults> {
  const snapshots = process.env.BENCH_MEMORY_SNAPSHOT !== '0'
  const wanted = envChoice('BENCH_MEMORY_VARIANTS', MEMORY_VARIANTS.map((v) => v.name))
  const kinds = envChoice<ServerKind>('BENCH_MEMORY_SERVERS', onPath('mosquitto') ? ['bare', 'mosquitto', 'broker'] : ['bare', 'broker'])
  const results: MemoryResults = {}
  for (const variant of MEMORY_VARIANTS) {
    if (!wanted.includes(variant.name)) continue
    results[variant.name] = {}
    for (const kind of kinds) {
      process.stderr.write(`${MEMORY_SECTION} ${variant.name} on ${kind} ... `)
      try {
        const run = await measureMemory(kind, variant, connections, snapshots)
        results[variant.name][kind] = run
        process.stderr.write(`${run.connected} connections, ${run.rssPerConn.toFixed(0)} B RSS/conn${run.heapPerConn === null ? '' : `, ${run.heapPerConn.toFixed(0)} B heap/conn`}\n`)
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err)
        process.stderr.write(`failed: ${message}\n`)
        errors.push(`${MEMORY_SECTION} ${variant.name} on ${kind}: ${message}`)
      }
    }
  }
  return results
}
