// The scenarios: which worker plays which role, and how the workers'
// counts become the reported figures. Each run gets a fresh server and two
// fresh workers (see run.ts).
import { goIdle, idleRoles, idleWorkerCount } from './idle-split.js'
import type { Worker } from './pool.js'
import type { Role, WorkerResult } from './protocol.js'
import { rssKiB, type Server, type ServerKind } from './servers.js'
import { envNumber } from './env.js'
import { mergeSorted, percentile } from './stats.js'

export interface Metric {
  name: string
  decimals: number
  /** Latency and memory: a ratio above 1 means the broker is worse. */
  lowerIsBetter: boolean
}

export interface Context {
  server: Server
  workers: Worker[]
  seconds: number
  connections: number
  note: (text: string) => void
  /** Set by the timed scenarios: the measured window (after the warm-up), process.hrtime.bigint() ns */
  load?: LoadWindow
}

export interface LoadWindow { fromNs: bigint, toNs: bigint }

export interface Scenario {
  name: string
  metrics: Metric[]
  /** servers it does not run on, and why (printed as a note) */
  skip?: Partial<Record<ServerKind, string>>
  run: (ctx: Context) => Promise<Record<string, number>>
  /** client workers it needs (default two) */
  workers?: (connections: number) => number
}

const SETUP_TIMEOUT_MS = 30_000
const RESULT_SLACK_MS = 30_000
/** idle-connections: the connects may take this long, and 5 ms more per connection (a loaded machine, 100 000 connections) */
const CONNECT_TIMEOUT_MS = 120_000
const SETTLE_MS = 1000
const SUBSCRIBE_FILTERS = 10_000
const SUBSCRIBE_TIMEOUT_MS = 660_000

const sleep = async (ms: number): Promise<void> => await new Promise((resolve) => setTimeout(resolve, ms))

/** Sends each worker its role against its port (one per worker) and waits until all have connected and subscribed. */
async function setupOn (workers: Worker[], ports: number[], roles: Role[]): Promise<void> {
  await Promise.all(workers.map(async (w, i) => {
    w.send({ type: 'setup', port: ports[i], role: roles[i] })
    await w.next('ready', SETUP_TIMEOUT_MS)
  }))
}

async function setupAll (ctx: Context, roles: Role[]): Promise<void> {
  await setupOn(ctx.workers, ctx.workers.map(() => ctx.server.port), roles)
}

/**
 * Sets the workers up, waits settleMs, runs the load for `seconds` and returns
 * what each counted after the warm-up.
 */
export async function timedOn (workers: Worker[], ports: number[], roles: Role[], seconds: number, settleMs = 0, load?: LoadWindow, warmup?: number): Promise<WorkerResult[]> {
  await setupOn(workers, ports, roles)
  if (settleMs > 0) await sleep(settleMs)
  // a warm-up given is run before the `seconds` measured; by default the first 20 % (at most 1 s) of them
  const warmupMs = warmup ?? Math.min(1000, seconds * 1000 * 0.2)
  const measureMs = warmup === undefined ? seconds * 1000 - warmupMs : seconds * 1000
  const totalMs = warmupMs + measureMs
  for (const w of workers) w.send({ type: 'go', warmupMs, measureMs })
  if (load !== undefined) {
    load.fromNs = process.hrtime.bigint() + BigInt(warmupMs * 1e6)
    load.toNs = load.fromNs + BigInt(Math.round(measureMs * 1e6))
  }
  const replies = await Promise.all(workers.map(async (w) => await w.next('result', totalMs + RESULT_SLACK_MS)))
  return replies.map((r) => r.result)
}

async function timed (ctx: Context, roles: Role[], warmupMs?: number): Promise<WorkerResult[]> {
  return await timedOn(ctx.workers, ctx.workers.map(() => ctx.server.port), roles, ctx.seconds, 0, ctx.load, warmupMs)
}

/** Sum over workers of received per second, each over its own measured window. */
export function receivedPerSecond (results: WorkerResult[]): number {
  return results.reduce((sum, r) => sum + (r.elapsedMs > 0 ? r.received / (r.elapsedMs / 1000) : 0), 0)
}

export const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, i) => from + i)

const rate = (name: string): Metric => ({ name, decimals: 0, lowerIsBetter: false })
const ms = (name: string): Metric => ({ name, decimals: 3, lowerIsBetter: true })

/** latency: the probe's rate (msg/s); latency-loaded: this many background publishers at BACKGROUND_RATE msg/s each */
const PROBE_RATE = 1000
const BACKGROUND_CLIENTS = 100
const BACKGROUND_RATE = 20

/**
 * The latency scenarios' warm-up (s), the same for every server, before their measured seconds: the
 * first seconds of a fresh Node process are lazy compilation and JIT tiering (a fresh node's p99
 * there is several times its later one); they are reported apart, as `cold p99 ms`.
 */
const LATENCY_WARMUP_S = envNumber('BENCH_LATENCY_WARMUP', 3, { zero: true })

/** A QoS 0 probe at PROBE_RATE msg/s in worker 0, `background` publishers (and their subscriber) in worker 1. */
async function latencyUnder (ctx: Context, background: number): Promise<Record<string, number>> {
  const results = await timed(ctx, [
    { kind: 'latency', probe: true, rate: PROBE_RATE, background: 0, backgroundRate: BACKGROUND_RATE },
    { kind: 'latency', probe: false, rate: PROBE_RATE, background, backgroundRate: BACKGROUND_RATE }
  ], LATENCY_WARMUP_S * 1000)
  const latencies = results[0].latenciesMs ?? new Float64Array(0)
  if (latencies.length === 0) throw new Error('no probe message was delivered')
  const cold = results[0].coldLatenciesMs ?? new Float64Array(0)
  return {
    'p50 ms': percentile(latencies, 50),
    'p99 ms': percentile(latencies, 99),
    'cold p99 ms': cold.length === 0 ? Number.NaN : percentile(cold, 99),
    'probe msg/s': results[0].received / (results[0].elapsedMs / 1000)
  }
}

const latencyMetrics = [ms('p50 ms'), ms('p99 ms'), ms('cold p99 ms'), rate('probe msg/s')]

/** 1 publisher → 100 subscribers, half per worker; v5Aliases: MQTT 5 subscribers asking for topic aliases and a packet size cap. */
async function fanOut (ctx: Context, v5Aliases: boolean): Promise<Record<string, number>> {
  const [w0, w1] = ctx.workers
  w1.onProgress = (received) => w0.send({ type: 'peer', received })
  const results = await timed(ctx, [
    { kind: 'fan-out', publisher: true, awaitPeer: true, subscribers: 50, firstId: 0, v5Aliases },
    { kind: 'fan-out', publisher: false, awaitPeer: false, subscribers: 50, firstId: 50, v5Aliases }
  ])
  return { 'deliveries/s': receivedPerSecond(results) }
}

export const scenarios: Scenario[] = [
  {
    name: 'fan-in',
    metrics: [rate('msg/s')],
    run: async (ctx) => {
      const results = await timed(ctx, [
        { kind: 'fan-in', subscriber: true, publishers: range(0, 5) },
        { kind: 'fan-in', subscriber: false, publishers: range(5, 10) }
      ])
      return { 'msg/s': receivedPerSecond(results) }
    }
  },
  {
    name: 'fan-out',
    metrics: [rate('deliveries/s')],
    run: async (ctx) => await fanOut(ctx, false)
  },
  {
    name: 'fan-out-v5-aliases',
    metrics: [rate('deliveries/s')],
    run: async (ctx) => await fanOut(ctx, true)
  },
  {
    name: 'qos1-pairs',
    metrics: [rate('msg/s'), { name: 'p50 ms', decimals: 3, lowerIsBetter: true }, { name: 'p99 ms', decimals: 3, lowerIsBetter: true }],
    run: async (ctx) => {
      const results = await timed(ctx, [
        { kind: 'qos1-pairs', pairs: range(0, 5) },
        { kind: 'qos1-pairs', pairs: range(5, 10) }
      ])
      const latencies = mergeSorted(results.map((r) => r.latenciesMs ?? new Float64Array(0)))
      return { 'msg/s': receivedPerSecond(results), 'p50 ms': percentile(latencies, 50), 'p99 ms': percentile(latencies, 99) }
    }
  },
  {
    name: 'latency',
    metrics: latencyMetrics,
    run: async (ctx) => await latencyUnder(ctx, 0)
  },
  {
    name: 'latency-loaded',
    metrics: latencyMetrics,
    run: async (ctx) => await latencyUnder(ctx, BACKGROUND_CLIENTS)
  },
  {
    name: 'idle-connections',
    workers: idleWorkerCount,
    metrics: [rate('connack/s'), ms('connect p50 ms'), ms('connect p99 ms'), { name: 'RSS MiB empty', decimals: 1, lowerIsBetter: true }, { name: 'RSS KiB/conn', decimals: 1, lowerIsBetter: true }],
    run: async (ctx) => {
      await setupAll(ctx, idleRoles(ctx.connections, ctx.workers.length, 0, { keepalive: 600 }))
      await sleep(SETTLE_MS)
      const before = rssKiB(ctx.server.pid)
      const { connected, failed, elapsedMs, latencies: connects } = await goIdle(ctx.workers, CONNECT_TIMEOUT_MS + 5 * ctx.connections)
      if (failed > 0) ctx.note(`idle-connections on ${ctx.server.label}: ${failed} of ${ctx.connections} connections got no CONNACK`)
      if (connected === 0) throw new Error('no connection was accepted')
      await sleep(SETTLE_MS)
      const after = rssKiB(ctx.server.pid)
      return { 'connack/s': connected / (elapsedMs / 1000), 'connect p50 ms': percentile(connects, 50), 'connect p99 ms': percentile(connects, 99), 'RSS MiB empty': before / 1024, 'RSS KiB/conn': (after - before) / connected }
    }
  },
  {
    name: 'subscribe-10k',
    skip: { bare: 'unpatched Aedes stores all of a SUBSCRIBE\'s filters once per filter (N²): 10 000 filters take many minutes' },
    metrics: [{ name: 'SUBACK s', decimals: 2, lowerIsBetter: true }, { name: 'RSS MiB grown', decimals: 1, lowerIsBetter: true }],
    run: async (ctx) => {
      const [w0, w1] = ctx.workers
      await setupOn([w0, w1], [ctx.server.port, ctx.server.port], [
        { kind: 'subscribe-many', filters: SUBSCRIBE_FILTERS },
        { kind: 'idle', connections: 0, firstId: 0, keepalive: 600 }
      ])
      const before = rssKiB(ctx.server.pid)
      w0.send({ type: 'go', warmupMs: 0, measureMs: 0 })
      const { result } = await w0.next('result', SUBSCRIBE_TIMEOUT_MS)
      const after = rssKiB(ctx.server.pid)
      return { 'SUBACK s': result.elapsedMs / 1000, 'RSS MiB grown': (after - before) / 1024 }
    }
  }
]
