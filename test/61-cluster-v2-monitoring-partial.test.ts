// v2 /monitoring/metrics/ and /monitoring/stats with a cluster node that is
// dead but not yet detected (issue 15 #12): 200 with the live nodes' values
// and, for the silent node, `{error: "badrpc", message}` in its place, as the
// other cluster-wide listings answer. Two nodes in this process on a real
// redis-server; the silent node is a member that beats in Redis and takes
// RPC requests off its channel but never answers, as a frozen process does.
import { Redis } from 'ioredis'
import t from 'tap'
import { freePort, startBroker, type TestBroker } from './helpers/broker.js'
import { waitFor } from './helpers/cluster.js'
import { startRedis } from './helpers/servers/redis.js'

const redis = await startRedis()
t.teardown(async () => await redis.close())
const cluster = `v2partial${process.pid}`
const RPC_TIMEOUT_MS = 1000

/** `apiPort`: the management API listens there (on one node only: a plugin module is one per process, and its server with it). */
async function node (nodeName: string, apiPort?: number): Promise<TestBroker> {
  const plugins: Record<string, Record<string, string>> = apiPort === undefined ? {} : { broker_management: { 'management.listener.http': `127.0.0.1:${apiPort}` } }
  return await startBroker({
    'node.name': nodeName,
    'cluster.discovery': 'redis',
    'cluster.name': cluster,
    'cluster.redis.server': `127.0.0.1:${redis.port}`,
    'cluster.heartbeat_interval': '300ms',
    'cluster.rpc_timeout': `${RPC_TIMEOUT_MS}ms`
  }, ['tcp'], undefined, { plugins })
}

/** A node that joined (its heartbeat is in Redis) and then froze: it takes requests and answers none. */
async function frozenMember (name: string): Promise<() => Promise<void>> {
  const client = new Redis({ port: redis.port, lazyConnect: true })
  const listener = new Redis({ port: redis.port, lazyConnect: true })
  await client.connect()
  await listener.connect()
  await listener.subscribe(`${cluster}:rpc:${name}`)
  await client.multi()
    .zadd(`${cluster}:nodes`, Date.now() + 600_000, name)
    .hset(`${cluster}:members`, name, JSON.stringify({ node: name, status: 'Running', started_at: Date.now(), engine_id: 'frozen' }))
    .exec()
  return async () => {
    await client.multi().zrem(`${cluster}:nodes`, name).hdel(`${cluster}:members`, name).exec()
    client.disconnect()
    listener.disconnect()
  }
}

async function v2 (port: number, path: string): Promise<{ status: number, body: { code?: number, result?: unknown } }> {
  const res = await fetch(`http://127.0.0.1:${port}/api/v2${path}`, {
    headers: { authorization: `Basic ${Buffer.from('admin:public').toString('base64')}` },
    signal: AbortSignal.timeout(RPC_TIMEOUT_MS + 10_000)
  })
  return { status: res.status, body: await res.json() as { code?: number, result?: unknown } }
}

t.test('metrics and stats: the live nodes\' values and an error value for the node that does not answer', async (t) => {
  const portA = await freePort()
  const a = await node('a@127.0.0.1', portA)
  t.teardown(async () => await a.stop())
  const b = await node('b@127.0.0.1')
  t.teardown(async () => await b.stop())
  const forget = await frozenMember('c@127.0.0.1')
  t.teardown(forget)
  await waitFor(async () => (await a.node.service.cluster.nodes()).length === 3, 10_000, 'a sees b and the frozen c')

  const silent = { error: 'badrpc', message: /no answer/ }
  const [metrics, stats] = await Promise.all([v2(portA, '/monitoring/metrics/'), v2(portA, '/monitoring/stats')])
  t.equal(metrics.status, 200, 'metrics: 200, not 502')
  t.match(metrics.body, { code: 0, result: { 'a@127.0.0.1': { 'packets/received': Number }, 'b@127.0.0.1': { 'packets/received': Number }, 'c@127.0.0.1': silent } })
  t.equal(stats.status, 200, 'stats: 200, not 502')
  t.match(stats.body, { code: 0, result: [{ 'a@127.0.0.1': { 'clients/count': Number } }, { 'b@127.0.0.1': { 'clients/count': Number } }, { 'c@127.0.0.1': silent }] })

  const single = await v2(portA, '/monitoring/metrics/c@127.0.0.1')
  t.equal(single.status, 502, 'asking the silent node itself still fails')
})
