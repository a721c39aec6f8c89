// Two cluster nodes in this process on a real redis-server, broker_recon on
// both, the management API on a only: GET /api/v3/nodes/b/recon asked of
// a is answered by b (its name, its clients), a node that is not in the
// cluster is refused as the built-in /nodes/:node routes refuse it, and a
// route refusal on b comes back as itself. A node_stats sampling under way
// ends when the plugin unloads.
import t from 'tap'
import { freePort } from '../../../lib/plugin-kit/testing.js'
import { waitFor } from '../../../test/helpers/cluster.js'
import { inProcessNode } from '../../../test/helpers/in-process-cluster.js'
import { closeAll, connect, type MqttClient } from '../../../test/helpers/mqtt.js'
import { startRedis } from '../../../test/helpers/servers/redis.js'
import type { ReconFacts } from '../index.js'

const redis = await startRedis()
t.teardown(async () => await redis.close())
const cluster = { name: `recon${process.pid}`, redisPort: redis.port }
const apiPort = await freePort()

const a = await inProcessNode(cluster, 'a@127.0.0.1')
t.teardown(async () => await a.stop())
const b = await inProcessNode(cluster, 'b@127.0.0.1')
t.teardown(async () => await b.stop())
await a.node.plugins.load('broker_recon')
await b.node.plugins.load('broker_recon')
await a.node.service.setPluginSettings('broker_management', { 'management.listener.http': `127.0.0.1:${apiPort}` })
await a.node.plugins.load('broker_management')
await waitFor(async () => (await a.node.service.cluster.nodes()).length === 2, 10_000, 'a sees b')

async function get (path: string): Promise<{ status: number, body: unknown }> {
  const res = await fetch(`http://127.0.0.1:${apiPort}/api/v3${path}`, { headers: { authorization: `Basic ${Buffer.from('admin:public').toString('base64')}` } })
  return { status: res.status, body: await res.json() }
}

const clients: MqttClient[] = []
t.teardown(async () => await closeAll(...clients))
clients.push(await connect(`mqtt://127.0.0.1:${a.port()}`, { clientId: 'on-a' }))
for (const id of ['on-b-1', 'on-b-2']) clients.push(await connect(`mqtt://127.0.0.1:${b.port()}`, { clientId: id }))
await waitFor(() => b.node.service.clientLoad().length === 2, 10_000, 'both clients listed on b')

t.test('asked of a, the route for b is answered by b', async (t) => {
  const { status, body } = await get('/nodes/b@127.0.0.1/recon?top=5')
  t.equal(status, 200)
  const facts = body as ReconFacts
  t.equal(facts.node, 'b@127.0.0.1')
  t.same(facts.top.recv_oct.map((c) => c.client_id).sort(), ['on-b-1', 'on-b-2'], 'b\'s clients, not a\'s')
  const own = (await get('/nodes/a@127.0.0.1/recon')).body as ReconFacts
  t.equal(own.node, 'a@127.0.0.1')
  t.same(own.top.recv_oct.map((c) => c.client_id), ['on-a'])
})

t.test('a node not in the cluster is refused as the built-in node routes refuse it; b\'s own refusals come back', async (t) => {
  t.same(await get('/nodes/c@127.0.0.1/recon'), { status: 404, body: { message: 'node not found' } })
  t.same(await get('/nodes/c@127.0.0.1/metrics'), { status: 404, body: { message: 'node not found' } }, 'as /nodes/:node/metrics')
  t.same(await get('/nodes/b@127.0.0.1/recon?top=0'), { status: 400, body: { code: 108, message: 'top must be 1 to 1000' } }, 'refused by b, as b said it')
})

t.test('the route of a plugin b has not loaded is not found there', async (t) => {
  await b.node.plugins.unload('broker_recon')
  t.teardown(async () => await b.node.plugins.load('broker_recon'))
  t.match(await get('/nodes/b@127.0.0.1/recon'), { status: 404, body: { message: /no plugin serves GET \/nodes\/b@127\.0\.0\.1\/recon on b@127\.0\.0\.1/ } })
})

t.test('a node_stats sampling under way ends when the plugin unloads', async (t) => {
  const sampling = a.node.commands.run(['recon', 'node_stats', '50', '1000']).then(() => new Error('answered'), (err: Error) => err)
  await new Promise((resolve) => setTimeout(resolve, 300))
  await a.node.plugins.unload('broker_recon')
  // had it run its 50 samples it would have answered them, not failed
  t.match(await sampling, { message: /unloaded during the sampling/ })
  t.equal(a.node.plugins.registrations('broker_recon'), 0)
})
