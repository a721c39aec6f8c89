// Shared subscriptions with real clients: $share/<group>/<filter> for MQTT 5
// and 3.1.1, $queue/<filter>, each strategy's distribution, redispatch when a
// member goes away, and no retained messages on a shared subscription.
import t from 'tap'
import type { IPublishPacket, ISubackPacket } from 'mqtt-packet'
import { startBroker, type TestBroker } from './helpers/broker.js'
import { closeAll, connect, noMessageWithin, type MqttClient } from './helpers/mqtt.js'
import { RawClient } from './helpers/raw-client.js'

async function members (broker: TestBroker, filter: string, count: number, version: 4 | 5 = 5): Promise<{ clients: MqttClient[], got: string[][] }> {
  const clients: MqttClient[] = []
  const got: string[][] = []
  for (let i = 0; i < count; i++) {
    const client = await connect(`mqtt://127.0.0.1:${broker.port()}`, { clientId: `m${i}-${Math.random()}`, protocolVersion: version })
    const mine: string[] = []
    client.on('message', (_topic, payload) => mine.push(payload.toString()))
    await client.subscribeAsync(filter, { qos: 1 })
    clients.push(client)
    got.push(mine)
  }
  return { clients, got }
}

async function publishAll (broker: TestBroker, topic: string, count: number, clientId = 'publisher'): Promise<void> {
  const pub = await connect(`mqtt://127.0.0.1:${broker.port()}`, { clientId })
  for (let i = 0; i < count; i++) await pub.publishAsync(topic, `${clientId}-${i}`, { qos: 1 })
  await pub.endAsync()
  await new Promise((resolve) => setTimeout(resolve, 200))
}

t.test('CONNACK says shared subscriptions are available; switched off they are refused', async (t) => {
  for (const on of [true, false]) {
    const broker = await startBroker({ 'zone.external.shared_subscription': String(on) })
    const raw = await RawClient.open(broker.port(), 5)
    const connack = await raw.connect({ clientId: 'caps' })
    t.equal(connack.properties?.sharedSubscriptionAvailable, on)
    raw.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: '$share/g/t', qos: 1 }, { topic: '$share/g', qos: 1 }] })
    t.same((await raw.next('suback') as ISubackPacket).granted, on ? [1, 0x8f] : [0x9e, 0x9e], on ? 'a group without a filter is invalid' : 'not supported')
    raw.end()
    await broker.stop()
  }
})

for (const version of [5, 4] as const) {
  t.test(`round_robin over three MQTT ${version === 5 ? '5' : '3.1.1'} members: each gets a third, in turn`, async (t) => {
    const broker = await startBroker({ 'broker.shared_subscription_strategy': 'round_robin' })
    t.teardown(broker.stop)
    const { clients, got } = await members(broker, '$share/g/rr/t', 3, version)
    t.teardown(() => closeAll(...clients))
    await publishAll(broker, 'rr/t', 30)
    t.same(got.map((g) => g.length), [10, 10, 10])
    t.same(got[0].slice(0, 2), ['publisher-0', 'publisher-3'], 'turn by turn')
  })
}

t.test('random: every message goes to exactly one member', async (t) => {
  const broker = await startBroker({ 'broker.shared_subscription_strategy': 'random' })
  t.teardown(broker.stop)
  const { clients, got } = await members(broker, '$share/g/rnd/t', 3)
  t.teardown(() => closeAll(...clients))
  await publishAll(broker, 'rnd/t', 60)
  t.same(got.flat().sort(), Array.from({ length: 60 }, (_, i) => `publisher-${i}`).sort())
  t.ok(got.every((g) => g.length > 0), `spread over the members (${got.map((g) => g.length).join('/')})`)
})

t.test('sticky: one member takes everything while it stays', async (t) => {
  const broker = await startBroker({ 'broker.shared_subscription_strategy': 'sticky' })
  t.teardown(broker.stop)
  const { clients, got } = await members(broker, '$share/g/st/t', 3)
  t.teardown(() => closeAll(...clients))
  await publishAll(broker, 'st/t', 20)
  t.same(got.map((g) => g.length).sort(), [0, 0, 20])
  const chosen = got.findIndex((g) => g.length === 20)
  await clients[chosen].endAsync()
  await publishAll(broker, 'st/t', 10, 'second')
  t.same(got.filter((_, i) => i !== chosen).map((g) => g.length).sort(), [0, 10], 'then another member sticks')
})

t.test('hash: all messages of one publisher go to the same member', async (t) => {
  const broker = await startBroker({ 'broker.shared_subscription_strategy': 'hash' })
  t.teardown(broker.stop)
  const { clients, got } = await members(broker, '$share/g/h/t', 3)
  t.teardown(() => closeAll(...clients))
  for (const publisher of ['alpha', 'beta', 'gamma', 'delta']) await publishAll(broker, 'h/t', 5, publisher)
  for (const publisher of ['alpha', 'beta', 'gamma', 'delta']) {
    const holders = got.filter((g) => g.some((m) => m.startsWith(`${publisher}-`)))
    t.equal(holders.length, 1, `${publisher}: one member`)
    t.equal(holders[0].filter((m) => m.startsWith(`${publisher}-`)).length, 5)
  }
})

t.test('groups are independent, $queue is a group, ordinary subscribers get every message', async (t) => {
  const broker = await startBroker({ 'broker.shared_subscription_strategy': 'round_robin' })
  t.teardown(broker.stop)
  const a = await members(broker, '$share/a/mix/t', 2)
  const b = await members(broker, '$share/b/mix/t', 2)
  const q = await members(broker, '$queue/mix/t', 2)
  const plain = await members(broker, 'mix/t', 1)
  t.teardown(() => closeAll(...a.clients, ...b.clients, ...q.clients, ...plain.clients))
  await publishAll(broker, 'mix/t', 6)
  t.same([a.got, b.got, q.got].map((g) => g.map((m) => m.length)), [[3, 3], [3, 3], [3, 3]])
  t.equal(plain.got[0].length, 6)
})

t.test('a QoS 1 message a member never acknowledged goes to another member when it leaves', async (t) => {
  const broker = await startBroker({ 'broker.shared_subscription_strategy': 'round_robin' })
  t.teardown(broker.stop)
  const silent = await RawClient.open(broker.port(), 5)
  await silent.connect({ clientId: 'silent' })
  silent.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: '$share/g/rd/t', qos: 1 }] })
  await silent.next('suback')
  const { clients, got } = await members(broker, '$share/g/rd/t', 1)
  t.teardown(() => closeAll(...clients))
  const pub = await connect(`mqtt://127.0.0.1:${broker.port()}`, { clientId: 'rd-pub' })
  t.teardown(() => closeAll(pub))
  await pub.publishAsync('rd/t', 'first', { qos: 1 })
  const held = await silent.next('publish') as IPublishPacket
  t.equal(held.payload.toString(), 'first', 'the silent member got it and does not acknowledge')
  t.same(got[0], [])
  silent.end()
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.same(got[0], ['first'], 'redispatched to the remaining member')
})

t.test('no retained messages on a shared subscription', async (t) => {
  const broker = await startBroker()
  t.teardown(broker.stop)
  const pub = await connect(`mqtt://127.0.0.1:${broker.port()}`, { clientId: 'ret-pub' })
  await pub.publishAsync('keep/t', 'kept', { qos: 1, retain: true })
  await pub.endAsync()
  const member = await connect(`mqtt://127.0.0.1:${broker.port()}`, { clientId: 'ret-member', protocolVersion: 5 })
  t.teardown(() => closeAll(member))
  await member.subscribeAsync('$share/g/keep/t', { qos: 1 })
  t.ok(await noMessageWithin(member, 300))
})

t.test('a persistent-session member receives QoS 1 shared messages and stays connected', async (t) => {
  const broker = await startBroker()
  t.teardown(broker.stop)
  const member = await connect(`mqtt://127.0.0.1:${broker.port()}`, { clientId: 'durable-member', clean: false })
  t.teardown(() => closeAll(member))
  const got: string[] = []
  member.on('message', (_topic, payload) => got.push(payload.toString()))
  await member.subscribeAsync('$share/g/dm/t', { qos: 1 })
  await publishAll(broker, 'dm/t', 5)
  t.same(got, ['publisher-0', 'publisher-1', 'publisher-2', 'publisher-3', 'publisher-4'])
  t.ok(member.connected)
  t.equal(broker.node.queues.length('durable-member'), 0, 'acknowledged messages leave its session store')
})
