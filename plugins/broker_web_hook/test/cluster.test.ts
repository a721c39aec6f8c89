// Two cluster nodes on a real Redis, both with the web hook: each event is
// posted once, by the node where it happens (the publisher's node posts
// message_publish, the subscriber's node message_delivered; a message that
// crosses to the other node is not posted again there).
import t from 'tap'
import { connectMqtt, startTestNode, type TestNode } from '../../../lib/plugin-kit/testing.js'
import { waitFor } from '../../../test/helpers/cluster.js'
import { startRedis } from '../../../test/helpers/servers/redis.js'
import { startEndpoint, type Hit } from './endpoint.js'

const redis = await startRedis()
t.teardown(async () => await redis.close())
const e = await startEndpoint()
t.teardown(e.close)
const cluster = `webhook${process.pid}`
const rule = (event: string): Record<string, string> => ({ [`web.hook.rule.${event}.1`]: JSON.stringify({ action: `on_${event.replace('.', '_')}` }) })

async function node (name: string): Promise<TestNode> {
  const started = await startTestNode({
    settings: {
      'node.name': name,
      'cluster.discovery': 'redis',
      'cluster.name': cluster,
      'cluster.redis.server': `127.0.0.1:${redis.port}`,
      'cluster.heartbeat_interval': '300ms',
      'cluster.rpc_timeout': '10s',
      'cluster.cookie': 'web-hook-test-cookie'
    },
    plugins: {
      // one lane: the node posts its events in the order they happened
      broker_web_hook: { 'web.hook.api.url': e.url(), 'web.hook.pool_size': 1, ...rule('client.connected'), ...rule('message.publish'), ...rule('message.delivered') }
    }
  })
  t.teardown(started.stop)
  return started
}

const a = await node('a@127.0.0.1')
const b = await node('b@127.0.0.1')
await waitFor(async () => (await a.node.service.cluster.nodes()).length === 2, 20_000, 'the nodes see each other')

const action = (name: string, topic: string) => (hit: Hit): boolean => hit.body.action === name && hit.body.topic === topic

t.test('each event is posted once, by the node where it happens', async (t) => {
  const sub = await connectMqtt(`mqtt://127.0.0.1:${a.port()}`, { clientId: 'sub-on-a' })
  t.teardown(async () => await sub.endAsync())
  await sub.subscribeAsync('cross/#', { qos: 1 })
  const pub = await connectMqtt(`mqtt://127.0.0.1:${b.port()}`, { clientId: 'pub-on-b' })
  t.teardown(async () => await pub.endAsync())
  // the subscription reaches node b through Redis: publish until the subscriber on a gets one
  await waitFor(async () => {
    const got = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 500)
      sub.once('message', () => { clearTimeout(timer); resolve(true) })
    })
    await pub.publishAsync('cross/probe', 'probe', { qos: 1 })
    return await got
  }, 20_000, 'a message crosses from b to a')

  const received = new Promise((resolve) => sub.on('message', (topic) => { if (topic === 'cross/last') resolve(topic) }))
  await pub.publishAsync('cross/one', 'one', { qos: 1 })
  await pub.publishAsync('cross/last', 'last', { qos: 1 })
  await received
  // each node posts in order: once a node's event for cross/last is in, its events for cross/one are too
  await e.waitFor(action('message_publish', 'cross/last'))
  await e.waitFor(action('message_delivered', 'cross/last'))

  t.same(e.hits.filter(action('message_publish', 'cross/one')).map((h) => h.body.node), ['b@127.0.0.1'], 'message_publish once, by the publisher\'s node')
  t.same(e.hits.filter(action('message_delivered', 'cross/one')).map((h) => [h.body.node, h.body.clientid]), [['a@127.0.0.1', 'sub-on-a']], 'message_delivered once, by the subscriber\'s node')
  t.same(e.hits.filter((h) => h.body.action === 'client_connected').map((h) => [h.body.node, h.body.clientid]).sort(),
    [['a@127.0.0.1', 'sub-on-a'], ['b@127.0.0.1', 'pub-on-b']], 'client_connected once per client, by its node')
})
