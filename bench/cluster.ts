// The cluster section (`cluster-fan-in`), at QoS 0 and at QoS 1: the fan-in
// load (10 publishers → 1 subscriber on bench/in/#) against (1) one broker
// node on its embedded store, (2) one node in cluster mode on Redis, (3) two
// nodes on the same Redis with the subscriber on node a and the publishers on
// node b, so that every message crosses Redis pub/sub; then (4) a mesh of three
// nodes, each with a subscriber on bench/in/# and 4 publishers (every message
// delivered on all three). Each node is watched by a LoopProbe (longest
// event-loop stall, largest RSS). One redis-server serves (2)–(4); each setup
// gets fresh nodes, a cluster name of its own and fresh workers. See
// bench/README.md.
import { envArgs, envChoice } from './env.js'
import { LoopProbe } from './loop-probe.js'
import { Worker } from './pool.js'
import type { Role } from './protocol.js'
import { range, receivedPerSecond, timedOn } from './scenarios.js'
import { onPath, Server } from './servers.js'

export const CLUSTER_SECTION = 'cluster-fan-in'

export type Setup = 'single' | 'cluster' | 'crossNode' | 'mesh'

export const SETUPS: Array<{ key: Setup, title: string }> = [
  { key: 'single', title: '(1) one node, embedded store' },
  { key: 'cluster', title: '(2) one node, cluster on Redis' },
  { key: 'crossNode', title: '(3) two nodes on Redis, cross-node' },
  { key: 'mesh', title: '(4) three nodes, each 4 publishers + 1 subscriber' }
]

export const QOS_LEVELS = [0, 1] as const
export type Qos = typeof QOS_LEVELS[number]

export interface SetupResult {
  /** deliveries/s to the subscribers (all of them in the mesh) */
  'msg/s': number
  /** msg/s the publishers wrote in the same window */
  'sent/s': number
  /** QoS 1: PUBACKs/s the publishers received; null at QoS 0 */
  'acked/s': number | null
  /** the longest a node did not answer a PINGREQ (its event loop's longest stall) in the measured window, ms, over all nodes */
  'stall ms': number
  /** the same before it: the clients connecting, the settling, and the first (cold) part of the load */
  'warm-up stall ms': number
  /** the largest RSS of a node, MiB */
  'RSS MiB': number
}

export interface ClusterResults {
  /** per QoS, per setup; null when that setup failed or the section was skipped */
  runs: Record<`qos${Qos}`, Record<Setup, SetupResult | null>>
  /** msg/s of (2) and (3) divided by that of (1), per QoS */
  ratio: Record<`qos${Qos}`, { 'cluster/single': number | null, 'crossNode/single': number | null }>
  /** Why the section did not run (no redis-server), else null. */
  skipped: string | null
}

/** Lets every node hear the others on the bus (hello frames) before the load starts. */
const SETTLE_MS = 1000

/**
 * Most messages the publishers may be ahead of the subscriber. Without it a
 * cluster node reads publishers as fast as Redis acknowledges their PUBLISH,
 * far faster than it delivers, and the backlog (Redis output buffer, node
 * heap) swamps what is measured. Large enough not to bind one node (about
 * 10 ms of its throughput here).
 */
const WINDOW = 10_000

/** The same clients in (1)–(3): worker 0 is the subscriber, worker 1 runs the 10 publishers. */
const fanInRoles = (qos: Qos): Role[] => [
  { kind: 'fan-in', subscriber: true, publishers: [], window: WINDOW, qos },
  { kind: 'fan-in', subscriber: false, publishers: range(0, 10), window: WINDOW, qos }
]

/** (4): one worker per node, its subscriber and 4 publishers (ids apart), each message delivered on every node. */
const MESH_NODES = 3
const meshRoles = (qos: Qos): Role[] => range(0, MESH_NODES).map((n) => (
  { kind: 'fan-in', subscriber: true, publishers: range(n * 4, n * 4 + 4), window: WINDOW, qos, deliveriesPerMessage: MESH_NODES }))

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
  // e.g. `--cpu-prof --cpu-prof-dir=/tmp/p` or `--trace-gc`: for finding where a node's time goes
  const nodeArgs = envArgs('BENCH_CLUSTER_NODE_ARGS')
  const started = await Promise.allSettled(specs.map(async (spec) => await Server.start('broker', { ...spec, nodeArgs })))
  const nodes = started.flatMap((s) => s.status === 'fulfilled' ? [s.value] : [])
  const failure = started.find((s): s is PromiseRejectedResult => s.status === 'rejected')
  if (failure !== undefined) {
    await Promise.all(nodes.map(async (n) => await n.stop()))
    throw failure.reason
  }
  return nodes
}

/** Runs the load on the nodes (fan-in: subscriber on nodes[0], publishers on the last; mesh: a worker per node) with a probe on each. */
async function measure (nodes: Server[], redis: Server | null, seconds: number, qos: Qos, mesh: boolean): Promise<SetupResult> {
  const servers = redis === null ? nodes : [...nodes, redis]
  const roles = mesh ? meshRoles(qos) : fanInRoles(qos)
  const workers = roles.map((_, i) => new Worker(i))
  if (!mesh) workers[0].onProgress = (received) => workers[1].send({ type: 'peer', received })
  const probes = await Promise.all(nodes.map(async (n, i) => await LoopProbe.start(n.port, n.pid, `bench-probe-${i}-${process.pid}`)))
  // every stall is the warm-up's until timedOn sets when the measured window begins
  const window = { fromNs: 2n ** 63n, toNs: 2n ** 63n }
  for (const probe of probes) probe.window = window
  try {
    const ports = mesh ? nodes.map((n) => n.port) : [nodes[0].port, nodes[nodes.length - 1].port]
    const results = await Promise.race([timedOn(workers, ports, roles, seconds, SETTLE_MS, window), ...servers.map(async (s) => await s.died)])
    const rate = receivedPerSecond(results)
    if (rate === 0) throw new Error('the subscriber received no message')
    const perSecond = (pick: (r: typeof results[number]) => number): number =>
      results.reduce((sum, r) => sum + (r.elapsedMs > 0 ? pick(r) / (r.elapsedMs / 1000) : 0), 0)
    const watched = probes.map((p) => p.stop())
    return {
      'msg/s': rate,
      'sent/s': perSecond((r) => r.sent),
      'acked/s': qos === 1 ? perSecond((r) => r.acked ?? 0) : null,
      'stall ms': Math.max(...watched.map((w) => w.longestStallMs)),
      'warm-up stall ms': Math.max(...watched.map((w) => w.longestWarmupStallMs)),
      'RSS MiB': Math.max(...watched.map((w) => w.maxRssMiB))
    }
  } catch (err) {
    // Clients notice a dead server before the runner sees it exit: blame the server, not them.
    await sleep(200)
    throw servers.find((s) => s.deathError !== null)?.deathError ?? err
  } finally {
    for (const p of probes) p.stop()
    await Promise.all(workers.map(async (w) => await w.close()))
    await Promise.all(nodes.map(async (n) => await n.stop()))
  }
}

async function runSetup (key: Setup, redis: Server | null, seconds: number, qos: Qos): Promise<SetupResult> {
  if (key === 'single') return await measure(await startNodes([{ label: 'broker (one node)' }]), null, seconds, qos, false)
  if (redis === null) throw new Error('no redis-server')
  const settings = clusterSettings(redis)
  const names = key === 'cluster' ? ['a'] : key === 'crossNode' ? ['a', 'b'] : ['a', 'b', 'c']
  const nodes = await startNodes(names.map((n) => ({ label: `cluster node ${n}`, nodeName: `${n}@127.0.0.1`, settings })))
  return await measure(nodes, redis, seconds, qos, key === 'mesh')
}

const noRuns = (): Record<Setup, SetupResult | null> => ({ single: null, cluster: null, crossNode: null, mesh: null })

/**
 * Runs the setups at QoS 0, then at QoS 1; progress on stderr, failures into
 * `errors`. Skipped (with a note) when redis-server is not on PATH.
 */
export async function runClusterSection (seconds: number, note: (text: string) => void, errors: string[]): Promise<ClusterResults> {
  const results: ClusterResults = {
    runs: { qos0: noRuns(), qos1: noRuns() },
    ratio: { qos0: { 'cluster/single': null, 'crossNode/single': null }, qos1: { 'cluster/single': null, 'crossNode/single': null } },
    skipped: null
  }
  if (!onPath('redis-server')) {
    results.skipped = 'redis-server is not on PATH'
    note(`${CLUSTER_SECTION} skipped: redis-server is not on PATH`)
    return results
  }
  // BENCH_CLUSTER_SETUPS (setup keys) and BENCH_CLUSTER_QOS (0, 1): only these; all when unset
  const keys = envChoice('BENCH_CLUSTER_SETUPS', SETUPS.map((s) => s.key))
  const setups = SETUPS.filter((s) => keys.includes(s.key))
  const levels = envChoice('BENCH_CLUSTER_QOS', QOS_LEVELS)
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
    for (const qos of levels) {
      for (const { key, title } of setups) {
        process.stderr.write(`${CLUSTER_SECTION} QoS ${qos} ${title} ... `)
        if (key !== 'single' && redis === null) {
          process.stderr.write('not run: no redis-server\n')
          continue
        }
        try {
          const run = await runSetup(key, redis, seconds, qos)
          results.runs[`qos${qos}`][key] = run
          const acked = run['acked/s'] === null ? '' : `, ${run['acked/s'].toFixed(0)} acked/s`
          process.stderr.write(`${run['msg/s'].toFixed(0)} msg/s (sent ${run['sent/s'].toFixed(0)}/s${acked}; stall ${run['stall ms'].toFixed(0)} ms, in the warm-up ${run['warm-up stall ms'].toFixed(0)} ms, RSS ${run['RSS MiB'].toFixed(0)} MiB)\n`)
        } catch (err) {
          const message = err instanceof Error ? err.message : String(err)
          process.stderr.write(`failed: ${message}\n`)
          errors.push(`${CLUSTER_SECTION} QoS ${qos} ${title}: ${message}`)
          // the next setups would only fail the same way
          if (redis !== null && redis.deathError !== null) break
        }
      }
      const runs = results.runs[`qos${qos}`]
      const single = runs.single?.['msg/s'] ?? null
      const ratio = (run: SetupResult | null): number | null => run === null || single === null || single === 0 ? null : run['msg/s'] / single
      results.ratio[`qos${qos}`] = { 'cluster/single': ratio(runs.cluster), 'crossNode/single': ratio(runs.crossNode) }
    }
  } finally {
    await redis?.stop()
  }
  return results
}
