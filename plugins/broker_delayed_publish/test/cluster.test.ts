// Two cluster nodes (in this process) on a real redis-server: a delayed
// message is published once in the cluster, by the node that took it in; the
// listing is the cluster's; when that node stops, the other takes its
// messages over and publishes each exactly once.
import t from 'tap'
import { startPluginNode, type PluginNode } from '../../../lib/plugin-kit/testing.js'
import { waitFor } from '../../../test/helpers/cluster.js'
import { noMessageWithin } from '../../../test/helpers/mqtt.js'
import { startRedis } from '../../../test/helpers/servers/redis.js'
import { ackCode, record } from './recorder.js'

const PLUGIN = 'broker_delayed_publish'
const redis = await startRedis()
t.teardown(async () => await redis.close())
const clusterName = `delayed${process.pid}`

async function clusterNode (name: string): Promise<PluginNode> {
  return await startPluginNode({
    plugin: PLUGIN,
    withApi: true,
    node: {
      'node.name': name,
      'cluster.discovery': 'redis',
      'cluster.name': clusterName,
      'cluster.redis.server': `127.0.0.1:${redis.port}`,
      'cluster.heartbeat_interval': '300ms',
      'cluster.rpc_timeout': '5s'
    }
  })
}

const n1 = await clusterNode('n1@127.0.0.1')
const n2 = await clusterNode('n2@127.0.0.1')
t.teardown(async () => {
  await n2.stop()
  await n1.stop()
})
await waitFor(async () => (await n1.node.service.cluster.nodes()).length === 2 && (await n2.node.service.cluster.nodes()).length === 2, 20_000, 'both nodes see each other')

interface Listed { items: Array<Record<string, unknown>>, meta: { count: number } }
const listed = async (node: PluginNode): Promise<Listed> => (await node.http('GET', '/delayed')).body as Listed

t.test('a delayed message is published once in the cluster, by the node that took it in', async (t) => {
  const s1 = await n1.mqtt({ clientId: 'sub-1', protocolVersion: 5 })
  const s2 = await n2.mqtt({ clientId: 'sub-2', protocolVersion: 5 })
  const got1 = record(s1)
  const got2 = record(s2)
  await s1.subscribeAsync('c/#', { qos: 1 })
  await s2.subscribeAsync('c/#', { qos: 1 })
  const pub = await n1.mqtt({ clientId: 'pub-1', protocolVersion: 5 })
  const sent = Date.now()
  t.equal(await ackCode(pub, '$delayed/1/c/once', 'once'), 0)
  t.match((await listed(n2)).items, [{ topic: 'c/once', node: 'n1@127.0.0.1' }], 'the other node lists it, owned by the first')
  const [a] = await got1.on('c/once')
  const [b] = await got2.on('c/once')
  t.ok(a.at - sent >= 1000 && b.at - sent >= 1000, 'not before its time')
  t.ok(await noMessageWithin(s2, 1000), 'no second copy')
  t.equal(got1.seen('c/once').length, 1)
  t.equal(got2.seen('c/once').length, 1)
  t.equal((await listed(n2)).meta.count, 0)
  await s1.endAsync()
})

t.test('its owner stops: the other node takes its messages over and publishes each exactly once', async (t) => {
  const s2 = await n2.mqtt({ clientId: 'sub-survivor', protocolVersion: 5 })
  const got = record(s2)
  await s2.subscribeAsync('s/#', { qos: 1 })
  const pub = await n1.mqtt({ clientId: 'pub-owner', protocolVersion: 5 })
  const topics = Array.from({ length: 10 }, (_, i) => `s/${i}`)
  for (const [i, topic] of topics.entries()) t.equal(await ackCode(pub, `$delayed/${2 + (i % 2)}/${topic}`, topic), 0)
  // one that cannot fall due during the test: it shows the change of owner
  t.equal(await ackCode(pub, '$delayed/3600/s/later', 'later'), 0)
  const stored = await listed(n2)
  t.equal(stored.meta.count, 11)
  t.ok(stored.items.every((i) => i.node === 'n1@127.0.0.1'), 'all owned by n1')
  await n1.stop()
  const later = await waitFor(async () => (await listed(n2)).items.find((i) => i.topic === 's/later' && i.node === 'n2@127.0.0.1'), 20_000, 'n2 owns the later message')
  t.pass('the survivor took the messages over')
  for (const topic of topics) t.match(await got.on(topic), [{ payload: topic }], `${topic} published by the survivor`)
  t.ok(await noMessageWithin(s2, 1500), 'no second copy')
  t.equal(got.arrivals.length, 10, 'each exactly once')
  t.equal((await n2.http('DELETE', `/delayed/${later?.msgid as string}`)).status, 200)
  t.equal((await listed(n2)).meta.count, 0, 'nothing left in the store')
})
