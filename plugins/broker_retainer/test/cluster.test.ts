// Two nodes of a cluster on a real redis-server, each with the retainer
// (one set to ram, one to disc: in a cluster both keep the messages in the
// cluster's store): a retained message set on one node reaches a new
// subscriber on the other, a clear on either is seen by both, the count and
// max_retained_messages are the cluster's, `retainer clean` on one node
// cleans for both, and a node whose retainer is unloaded ignores the retain
// flag while the other goes on serving what the cluster keeps.
import t, { type Test } from 'tap'
import { startPluginNode, type PluginNode } from '../../../lib/plugin-kit/testing.js'
import { closeAll, nextMessages, noMessageWithin, type Received } from '../../../test/helpers/mqtt.js'
import { startRedis } from '../../../test/helpers/servers/redis.js'

const PLUGIN = 'broker_retainer'
const NOTHING_MS = 500

const redis = await startRedis()
t.teardown(async () => await redis.close())
const clusterName = `rt${process.pid}x${Date.now().toString(36)}`

async function clusterNode (name: string, storage: string): Promise<PluginNode> {
  return await startPluginNode({
    plugin: PLUGIN,
    settings: { 'retainer.storage_type': storage, 'retainer.max_retained_messages': 3 },
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

const n1 = await clusterNode('r1@127.0.0.1', 'ram')
const n2 = await clusterNode('r2@127.0.0.1', 'disc')
t.teardown(async () => {
  await n1.stop()
  await n2.stop()
})

async function retained (t: Test, node: PluginNode, filter: string, count: number, protocolVersion: 4 | 5 = 4): Promise<Received[]> {
  const client = await node.mqtt({ clientId: `sub-${Math.random().toString(36).slice(2)}`, protocolVersion })
  t.teardown(async () => await closeAll(client))
  const got: Promise<Received[]> = count > 0 ? nextMessages(client, count) : Promise.resolve([])
  await client.subscribeAsync(filter, { qos: 1 })
  const messages = await got
  t.ok(await noMessageWithin(client, NOTHING_MS), `${filter}: ${count} and no more`)
  await client.endAsync()
  return messages.sort((a, b) => a.topic.localeCompare(b.topic))
}
const payloads = (messages: Received[]): string[] => messages.map((m) => `${m.topic}=${m.payload}`)

async function publish (node: PluginNode, topic: string, payload: string, protocolVersion: 4 | 5 = 4, properties?: Record<string, unknown>): Promise<void> {
  const pub = await node.mqtt({ clientId: `pub-${Math.random().toString(36).slice(2)}`, protocolVersion })
  await pub.publishAsync(topic, payload, { qos: 1, retain: true, ...(properties === undefined ? {} : { properties }) })
  await pub.endAsync()
}

/** `read()` once it answers `want`, or its last answer after a generous deadline. */
async function eventually<T> (read: () => T, want: T, deadlineMs = 10_000): Promise<T> {
  const end = Date.now() + deadlineMs
  let value = read()
  while (value !== want && Date.now() < end) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    value = read()
  }
  return value
}

const info = async (node: PluginNode): Promise<string> => (await node.node.commands.run(['retainer', 'info'])).text

t.test('set on one node, seen from the other; cleared on either, gone for both', async (t) => {
  await publish(n1, 'c/1', 'from n1')
  await publish(n2, 'c/2', 'from n2', 5, { contentType: 'text/plain' })
  t.same(payloads(await retained(t, n2, 'c/#', 2)), ['c/1=from n1', 'c/2=from n2'], 'a subscriber on n2')
  const onN1 = await retained(t, n1, 'c/+', 2, 5)
  t.same(payloads(onN1), ['c/1=from n1', 'c/2=from n2'], 'a subscriber on n1')
  t.match(onN1[1].properties, { contentType: 'text/plain' }, 'with its properties')
  t.equal(await info(n1), 'retained/total: 2')
  t.equal(await info(n2), 'retained/total: 2')
  await publish(n2, 'c/1', '')
  t.same(payloads(await retained(t, n1, 'c/#', 1)), ['c/2=from n2'], 'the clear on n2 is seen on n1')
  t.equal(n2.node.observability.statsV3()['retained/count'], 1, 'retained/count on the node that cleared it')
  t.equal(await eventually(() => n1.node.observability.statsV3()['retained/count'], 1), 1, '…and on the other, once it counts again (every second)')
})

t.test('max_retained_messages counts the cluster\'s messages', async (t) => {
  await publish(n1, 'c/3', '3')
  await publish(n1, 'c/4', '4')
  await publish(n2, 'c/5', 'one too many')
  t.same(payloads(await retained(t, n1, 'c/#', 3)), ['c/2=from n2', 'c/3=3', 'c/4=4'])
  await publish(n2, 'c/4', 'replaced at the limit')
  t.same(payloads(await retained(t, n1, 'c/4', 1)), ['c/4=replaced at the limit'])
})

t.test('retainer clean on one node cleans for both', async (t) => {
  t.equal((await n2.node.commands.run(['retainer', 'clean', 'c/+'])).text, 'Cleaned 3 retained messages')
  t.same(await retained(t, n1, 'c/#', 0), [])
  t.equal(await info(n1), 'retained/total: 0')
})

t.test('unloaded on one node: it ignores the retain flag, the other still serves the cluster\'s', async (t) => {
  await publish(n2, 'u/kept', 'kept')
  await n1.node.plugins.unload(PLUGIN)
  t.teardown(async () => await n1.node.plugins.load(PLUGIN))
  t.same(await retained(t, n1, 'u/#', 0), [], 'n1 sends nothing on SUBSCRIBE')
  await publish(n1, 'u/through-n1', 'not kept')
  t.same(payloads(await retained(t, n2, 'u/#', 1)), ['u/kept=kept'], 'n2 still serves what the cluster keeps; n1\'s message was not kept')
})
