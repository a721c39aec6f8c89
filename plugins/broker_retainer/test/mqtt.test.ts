// Retained messages through real MQTT clients (3.1.1 and 5) on a real node,
// for each storage type: kept and sent on SUBSCRIBE with retain=1, MQTT 5
// properties kept, the remaining Message Expiry Interval, wildcard filters,
// no client message under `#` for `$SYS` and the node's own `$SYS` notices
// still retained, clearing, an MQTT 5 expiry, the metric and the statistics,
// and `retainer info | topics | clean` (in the node, and once through the
// real bin/broker_ctl).
import t, { type Test } from 'tap'
import { startPluginNode, type PluginNode } from '../../../lib/plugin-kit/testing.js'
import { closeAll, nextMessages, noMessageWithin, type MqttClient, type Received } from '../../../test/helpers/mqtt.js'
import { ctl } from '../../../test/helpers/ctl.js'

const NOTHING_MS = 500

async function subscriber (node: PluginNode, clientId: string, protocolVersion: 4 | 5): Promise<MqttClient> {
  return await node.mqtt({ clientId, protocolVersion })
}

/** What a new subscriber to `filter` gets on SUBSCRIBE: `count` messages, then nothing more. */
async function retainedFor (t: Test, node: PluginNode, filter: string, count: number, protocolVersion: 4 | 5 = 4): Promise<Received[]> {
  const client = await subscriber(node, `sub-${Math.random().toString(36).slice(2)}`, protocolVersion)
  t.teardown(async () => await closeAll(client))
  const got = count > 0 ? nextMessages(client, count) : Promise.resolve([])
  await client.subscribeAsync(filter, { qos: 2 })
  const messages = await got
  t.ok(await noMessageWithin(client, NOTHING_MS), `${filter}: no more than ${count}`)
  await client.endAsync()
  return messages.sort((a, b) => a.topic.localeCompare(b.topic))
}

for (const type of ['ram', 'disc', 'disc_only'] as const) {
  t.test(`storage_type = ${type}`, async (t) => {
    const node = await startPluginNode({ plugin: 'broker_retainer', settings: { 'retainer.storage_type': type } })
    t.teardown(node.stop)
    const metric = (): number => node.node.observability.metricsV3()['messages/retained']
    const stat = (): number => node.node.observability.statsV3()['retained/count']

    const v4 = await node.mqtt({ clientId: `pub4-${type}`, protocolVersion: 4 })
    const v5 = await node.mqtt({ clientId: `pub5-${type}`, protocolVersion: 5 })
    t.teardown(async () => await closeAll(v4, v5))
    const live = await node.mqtt({ clientId: `live-${type}`, protocolVersion: 4 })
    t.teardown(async () => await closeAll(live))
    await live.subscribeAsync('shop/#', { qos: 1 })
    const liveGot = nextMessages(live, 2)

    await v4.publishAsync('shop/a', 'A from 3.1.1', { qos: 1, retain: true })
    await v5.publishAsync('shop/b', 'B from 5', {
      qos: 2,
      retain: true,
      properties: { messageExpiryInterval: 300, contentType: 'text/plain', responseTopic: 'reply/b', correlationData: Buffer.from('corr'), payloadFormatIndicator: true, userProperties: { origin: 'test', tags: ['x', 'y'] } }
    })
    t.match(await liveGot, [{ topic: 'shop/a', retain: false }, { topic: 'shop/b', retain: false }], 'live subscribers get them at once, retain=0')
    t.equal(metric(), 2, 'messages/retained counts each one kept')
    t.equal(stat(), 2, 'retained/count')

    t.test('3.1.1 subscriber: both, retain=1, QoS as published (up to the granted one)', async (t) => {
      const got = await retainedFor(t, node, 'shop/#', 2)
      t.same(got.map((m) => [m.topic, m.payload, m.retain, m.qos]), [['shop/a', 'A from 3.1.1', true, 1], ['shop/b', 'B from 5', true, 2]])
    })

    t.test('5 subscriber: the properties kept, the expiry counting down', async (t) => {
      const [, b] = await retainedFor(t, node, 'shop/+', 2, 5)
      t.match(b.properties, { contentType: 'text/plain', responseTopic: 'reply/b', payloadFormatIndicator: true, userProperties: { origin: 'test', tags: ['x', 'y'] } })
      t.same(b.properties?.correlationData, Buffer.from('corr'))
      const left = b.properties?.messageExpiryInterval as number
      t.ok(left > 0 && left <= 300, `the remaining Message Expiry Interval (${left} s)`)
    })

    t.test('$SYS: the node keeps its own; a client filter starting with a wildcard gets none [MQTT-4.7.2-1]', async (t) => {
      const sys = await retainedFor(t, node, '$SYS/brokers/+/version', 1)
      t.equal(sys[0].retain, true)
      const all = await retainedFor(t, node, '#', 2)
      t.same(all.map((m) => m.topic), ['shop/a', 'shop/b'])
    })

    t.test('a topic name filter, and a filter with no match', async (t) => {
      t.same((await retainedFor(t, node, 'shop/a', 1)).map((m) => m.payload), ['A from 3.1.1'])
      t.same(await retainedFor(t, node, 'other/#', 0), [])
    })

    t.test('replaced, then cleared by an empty retained message', async (t) => {
      await v5.publishAsync('shop/a', 'A again', { qos: 1, retain: true })
      t.same((await retainedFor(t, node, 'shop/a', 1)).map((m) => m.payload), ['A again'])
      await v4.publishAsync('shop/a', '', { qos: 1, retain: true })
      t.same(await retainedFor(t, node, 'shop/a', 0), [])
      t.equal(metric(), 3, 'a clear does not count')
      t.equal(stat(), 1)
      t.equal(node.node.observability.statsV3()['retained/max'], 2, 'the mark stays')
    })

    t.test('an MQTT 5 Message Expiry Interval ends it', async (t) => {
      await v5.publishAsync('short/lived', 'one second', { qos: 1, retain: true, properties: { messageExpiryInterval: 1 } })
      t.equal((await retainedFor(t, node, 'short/lived', 1)).length, 1)
      await new Promise((resolve) => setTimeout(resolve, 1500))
      t.same(await retainedFor(t, node, 'short/#', 0), [], 'expired: not delivered (and removed)')
      t.same((await node.node.commands.run(['retainer', 'topics'])).data, ['shop/b'])
    })

    t.test('retainer info | topics | clean [<filter>]', async (t) => {
      await v4.publishAsync('clean/1', '1', { qos: 1, retain: true })
      await v4.publishAsync('clean/2', '2', { qos: 1, retain: true })
      const run = async (...args: string[]): Promise<string> => (await node.node.commands.run(args)).text
      t.equal(await run('retainer', 'info'), 'retained/total: 3')
      t.equal(await run('retainer', 'topics'), 'clean/1\nclean/2\nshop/b')
      t.equal(await run('retainer', 'clean', 'clean/+'), 'Cleaned 2 retained messages')
      t.same(await retainedFor(t, node, 'clean/#', 0), [])
      await t.rejects(node.node.commands.run(['retainer', 'clean', 'a/#/b']), /not a topic filter/)
      await t.rejects(node.node.commands.run(['retainer', 'nothing']), /bad arguments/)
      t.equal(await run('retainer', 'clean'), 'Cleaned 1 retained messages')
      t.equal(await run('retainer', 'info'), 'retained/total: 0')
      t.equal(stat(), 0)
      t.same(await retainedFor(t, node, '#', 0), [])
    })
  })
}

t.test('bin/broker_ctl retainer, as an operator runs it', async (t) => {
  const node = await startPluginNode({ plugin: 'broker_retainer' })
  t.teardown(node.stop)
  const pub = await node.mqtt({ clientId: 'ctl-pub' })
  t.teardown(async () => await closeAll(pub))
  await pub.publishAsync('ctl/a', 'a', { qos: 1, retain: true })
  await pub.publishAsync('ctl/b', 'b', { qos: 1, retain: true })
  t.match(await ctl(node.dataDir, 'retainer', 'info'), { code: 0, stdout: 'retained/total: 2\n' })
  t.match(await ctl(node.dataDir, 'retainer', 'topics'), { code: 0, stdout: 'ctl/a\nctl/b\n' })
  const json = await ctl(node.dataDir, '--json', 'retainer', 'topics')
  t.same([json.code, JSON.parse(json.stdout)], [0, ['ctl/a', 'ctl/b']], '--json: the topics as a list')
  t.match(await ctl(node.dataDir, 'retainer', 'clean', 'ctl/a'), { code: 0, stdout: 'Cleaned 1 retained messages\n' })
  t.match(await ctl(node.dataDir, 'retainer', 'clean', '#/x'), { code: 1, stderr: /not a topic filter/ })
  t.match(await ctl(node.dataDir, 'retainer'), { code: 2 })
  t.match(await ctl(node.dataDir, 'retainer', 'clean'), { code: 0, stdout: 'Cleaned 1 retained messages\n' })
})
