// How idle connections are spread over client worker processes and source
// addresses, so that BENCH_CONNECTIONS=100000 fits: a worker holds one file
// descriptor per socket, and one source address has about 28 000 ephemeral
// ports towards one server port.
import type { Worker } from './pool.js'
import type { Role } from './protocol.js'
import { mergeSorted } from './stats.js'

/** Most idle connections one client worker holds. */
export const CONNECTIONS_PER_WORKER = 25_000
/** Connections per source address (127.0.0.x) beyond which the next address is used. */
const CONNECTIONS_PER_ADDRESS = 20_000

/** Client workers for `connections` idle connections: two at least (the machine's cores), more past CONNECTIONS_PER_WORKER each. */
export const idleWorkerCount = (connections: number): number => Math.max(2, Math.ceil(connections / CONNECTIONS_PER_WORKER))

type IdleRole = Extract<Role, { kind: 'idle' }>

/** One idle role per worker, ids from `firstId` on, source addresses spread when one would run out of ports. */
export function idleRoles (connections: number, workers: number, firstId: number, options: Pick<IdleRole, 'keepalive' | 'protocolVersion' | 'clean'>): IdleRole[] {
  const addresses = Math.ceil(connections / CONNECTIONS_PER_ADDRESS)
  const localAddresses = addresses > 1 ? Array.from({ length: addresses }, (_, i) => `127.0.0.${i + 1}`) : undefined
  const each = Math.ceil(connections / workers)
  return Array.from({ length: workers }, (_, i) => {
    const start = Math.min(connections, i * each)
    return { kind: 'idle', connections: Math.min(each, connections - start), firstId: firstId + start, ...options, localAddresses }
  })
}

/** What the workers' idle connects came to: accepted and refused connections, the longest worker's time, every CONNECT → CONNACK latency (sorted). */
export interface IdleOutcome { connected: number, failed: number, elapsedMs: number, latencies: Float64Array }

/** Starts the idle roles the workers were set up with and gathers what they counted. */
export async function goIdle (workers: Worker[], timeoutMs: number): Promise<IdleOutcome> {
  for (const w of workers) w.send({ type: 'go', warmupMs: 0, measureMs: 0 })
  const results = (await Promise.all(workers.map(async (w) => await w.next('result', timeoutMs)))).map((r) => r.result)
  return {
    connected: results.reduce((n, r) => n + (r.connected ?? 0), 0),
    failed: results.reduce((n, r) => n + (r.failed ?? 0), 0),
    elapsedMs: Math.max(...results.map((r) => r.elapsedMs)),
    latencies: mergeSorted(results.map((r) => r.latenciesMs ?? new Float64Array(0)))
  }
}

/** `count` idle connections to `port` from the workers (ids from `firstId`): set up, then connected. */
export async function connectIdle (workers: Worker[], port: number, count: number, firstId: number, options: Pick<IdleRole, 'keepalive' | 'protocolVersion' | 'clean'>, timeoutMs: number): Promise<IdleOutcome> {
  const roles = idleRoles(count, workers.length, firstId, options)
  await Promise.all(workers.map(async (w, i) => {
    w.send({ type: 'setup', port, role: roles[i] })
    await w.next('ready', 30_000)
  }))
  return await goIdle(workers, timeoutMs)
}
