// The cluster section (`cluster-fan-in`): the fan-in load (10 QoS 0
// publishers → 1 subscriber on bench/in/#) against (1) one broker node on its
// embedded store, (2) one node in cluster mode on Redis, (3) two nodes on the
// same Redis with the subscriber on node a and the publishers on node b, so
// that every message crosses Redis pub/sub. One redis-server serves (2) and
// (3); each setup gets fresh nodes, a cluster name of its own and two fresh
// workers. See bench/README.md.
import { Worker } from './pool.js'
import type { Role } from './protocol.js'
import { range, receivedPerSecond, timedOn } from './scenarios.js'
import { onPath, Server } from './servers.js'

export const CLUSTER_SECTION = 'cluster-fan-in'

export type Setup = 'single' | 'cluster' | 'crossNode'

export const SETUPS: Array<{ key: Setup, title: string }> = [
  { key: 'single', title: '(1) one node, embedded store' },
  { key: 'cluster', title: '(2) one node, cluster on Redis' },
  { key: 'crossNode', title: '(3) two nodes on Redis, cross-node' }
]

export interface ClusterResults {
  /** msg/s received by the subscriber; null when that setup failed or the section was skipped. */
  'msg/s': Record<Setup, number | null>
  /** msg/s the publishers wrote in the same window; far above msg/s when the window stalled (see README). */
  'sent/s': Record<Setup, number | null>
  /** msg/s of (2) and (3) divided by that of (1). */
  ratio: { 'cluster/single': number | null, 'crossNode/single': number | null }
  /** Why the section did not run (no redis-server), else null. */
  skipped: string | null
}

/** Lets the subscriber's SUBSCRIBE reach Redis (mqemitter-redis subscribes asynchronously) before the load starts. */
const SETTLE_MS = 1000

/**
 * Most messages the publishers may be ahead of the subscriber. Without it a
 * cluster node reads publishers as fast as Redis acknowledges their PUBLISH,
 * far faster than it delivers, and the backlog (Redis output buffer, node
 * heap) swamps what is measured. Large enough not to bind one node (about
 * 10 ms of its throughput here).
 */
const WINDOW = 10_000

// The same clients in every setup: worker 0 is the subscriber, worker 1 runs the 10 publishers.
const ROLES: Role[] = [
  { kind: 'fan-in', subscriber: true, publishers: [], window: WINDOW },
  { kind: 'fan-in', subscriber: false, publishers: range(0, 10), window: WINDOW }
]

const sleep = async (ms: number): Promise<void> => await new Promise((resolve) => setTimeout(resolve, ms))

let clusters = 0

function clusterSettings (redis: Server): Record<string, string> {
  return {
    'cluster.discovery': 'redis',
    'cluster.redis.server': `127.0.0.1:${redis.port}`,
    'cluster.name': `bench${process.pid}x${Date.now().toString(36)}x${++clusters}`
  }
}

/** Starts every node (in parallel); if one fails, stops those that started. */
async function startNodes (specs: Array<Parameters<typeof Server.start>[1]>): Promise<Server[]> {
  const started = await Promise.allSettled(specs.map(async (spec) => await Server.start('broker', spec)))
  const nodes = started.flatMap((s) => s.status === 'fulfilled' ? [s.value] : [])
  const failure = started.find((s): s is PromiseRejectedResult => s.status === 'rejected')
  if (failure !== undefined) {
    await Promise.all(nodes.map(async (n) => await n.stop()))
    throw failure.reason
  }
  return nodes
}

/** The subscriber on nodes[0], the publishers on the last node; msg/s received by the subscriber. */
async function measure (nodes: Server[], redis: Server | null, seconds: number): Promise<{ received: number, sent: number }> {
  const servers = redis === null ? nodes : [...nodes, redis]
  const workers = [new Worker(0), new Worker(1)]
  workers[0].onProgress = (received) => workers[1].send({ type: 'peer', received })
  try {
    const ports = [nodes[0].port, nodes[nodes.length - 1].port]
    const results = await Promise.race([timedOn(workers, ports, ROLES, seconds, SETTLE_MS), ...servers.map(async (s) => await s.died)])
    const rate = receivedPerSecond(results)
    if (rate === 0) throw new Error('the subscriber received no message')
    const sent = results[1].elapsedMs > 0 ? results[1].sent / (results[1].elapsedMs / 1000) : 0
    return { received: rate, sent }
  } catch (err) {
    // Clients notice a dead server before the runner sees it exit: blame the server, not them.
    await sleep(200)
    throw servers.find((s) => s.deathError !== null)?.deathError ?? err
  } finally {
    await Promise.all(workers.map(async (w) => await w.close()))
    await Promise.all(nodes.map(async (n) => await n.stop()))
  }
}

async function runSetup (key: Setup, redis: Server | null, seconds: number): Promise<{ received: number, sent: number }> {
  if (key === 'single') return await measure(await startNodes([{ label: 'broker (one node)' }]), null, seconds)
  if (redis === null) throw new Error('no redis-server')
  const settings = clusterSettings(redis)
  const names = key === 'cluster' ? ['a'] : ['a', 'b']
  const nodes = await startNodes(names.map((n) => ({ label: `cluster node ${n}`, nodeName: `${n}@127.0.0.1`, settings })))
  return await measure(nodes, redis, seconds)
}

/**
 * Runs the three setups in order; progress on stderr, failures into `errors`.
 * Skipped (with a note) when redis-server is not on PATH.
 */
export async function runClusterSection (seconds: number, note: (text: string) => void, errors: string[]): Promise<ClusterResults> {
  const results: ClusterResults = {
    'msg/s': { single: null, cluster: null, crossNode: null },
    'sent/s': { single: null, cluster: null, crossNode: null },
    ratio: { 'cluster/single': null, 'crossNode/single': null },
    skipped: null
  }
  if (!onPath('redis-server')) {
    results.skipped = 'redis-server is not on PATH'
    note(`${CLUSTER_SECTION} skipped: redis-server is not on PATH`)
    return results
  }
  let redis: Server | null = null
  try {
    process.stderr.write(`${CLUSTER_SECTION}: starting redis-server ... `)
    redis = await Server.startRedis()
    process.stderr.write(`port ${redis.port}\n`)
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err)
    process.stderr.write(`failed: ${message}\n`)
    errors.push(`${CLUSTER_SECTION}: redis-server: ${message}`)
  }
  try {
    for (const { key, title } of SETUPS) {
      process.stderr.write(`${CLUSTER_SECTION} ${title} ... `)
      if (key !== 'single' && redis === null) {
        process.stderr.write('not run: no redis-server\n')
        continue
      }
      try {
        const { received, sent } = await runSetup(key, redis, seconds)
        results['msg/s'][key] = received
        results['sent/s'][key] = sent
        process.stderr.write(`${received.toFixed(0)} msg/s (publishers sent ${sent.toFixed(0)} msg/s)\n`)
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err)
        process.stderr.write(`failed: ${message}\n`)
        errors.push(`${CLUSTER_SECTION} ${title}: ${message}`)
        // the next setups would only fail the same way
        if (redis !== null && redis.deathError !== null) break
      }
    }
  } finally {
    await redis?.stop()
  }
  const single = results['msg/s'].single
  const ratio = (value: number | null): number | null => value === null || single === null || single === 0 ? null : value / single
  results.ratio['cluster/single'] = ratio(results['msg/s'].cluster)
  results.ratio['crossNode/single'] = ratio(results['msg/s'].crossNode)
  return results
}
