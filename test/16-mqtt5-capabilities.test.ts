// MQTT 5 beyond the Aedes beta (issue 4): CONNACK capability flags from the
// configuration and the broker behaving as advertised, several subscription
// identifiers on one delivery, the will delay kept off the forwarded will,
// outbound topic aliases, and the client's Maximum Packet Size — on the wire.
import t from 'tap'
import type { IConnackPacket, IDisconnectPacket, IPublishPacket, ISubackPacket } from 'mqtt-packet'
import { onMessageDropped } from '../lib/engine/internals.js'
import { startBroker, type TestBroker } from './helpers/broker.js'
import { closeAll, connect, nextMessages } from './helpers/mqtt.js'
import { RawClient } from './helpers/raw-client.js'

async function v5 (broker: TestBroker, t: { teardown: (fn: () => unknown) => void }, fields: Record<string, unknown> = {}): Promise<{ raw: RawClient, connack: IConnackPacket }> {
  const raw = await RawClient.open(broker.port(), 5)
  t.teardown(() => raw.end())
  const connack = await raw.connect({ clientId: `v5-${Math.random()}`, ...fields })
  return { raw, connack }
}

function publish (raw: RawClient, topic: string, fields: Partial<IPublishPacket> = {}): void {
  raw.send({ cmd: 'publish', topic, payload: Buffer.from('x'), qos: 0, retain: false, dup: false, ...fields } as IPublishPacket)
}

t.test('CONNACK advertises the configured capabilities', async (t) => {
  const broker = await startBroker()
  t.teardown(broker.stop)
  const { connack } = await v5(broker, t)
  t.match(connack.properties, {
    retainAvailable: true,
    wildcardSubscriptionAvailable: true,
    subscriptionIdentifiersAvailable: true,
    topicAliasMaximum: 65535,
    receiveMaximum: 100,
    maximumPacketSize: 1048576
  })
  t.equal(connack.properties?.maximumQoS, undefined, 'Maximum QoS is only sent when below 2')
})

t.test('zone.external.max_qos_allowed = 1', async (t) => {
  const broker = await startBroker({ 'zone.external.max_qos_allowed': 1 })
  t.teardown(broker.stop)
  const { raw, connack } = await v5(broker, t)
  t.equal(connack.properties?.maximumQoS, 1)
  raw.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'q/t', qos: 2 }] })
  t.same((await raw.next('suback') as ISubackPacket).granted, [1], 'a QoS 2 subscription is granted QoS 1')
  publish(raw, 'q/t', { qos: 2, messageId: 2 })
  t.equal((await raw.next('disconnect') as IDisconnectPacket).reasonCode, 0x9b, 'a QoS 2 PUBLISH: DISCONNECT QoS not supported')
  const willed = await RawClient.open(broker.port(), 5)
  t.teardown(() => willed.end())
  const ack = await willed.connect({ clientId: 'willed', will: { topic: 'w', payload: Buffer.from('w'), qos: 2, retain: false } })
  t.equal(ack.reasonCode, 0x9b, 'a QoS 2 will is refused at CONNECT')
})

t.test('zone.external.retain_available = false', async (t) => {
  const broker = await startBroker({ 'zone.external.retain_available': 'false' })
  t.teardown(broker.stop)
  const { raw, connack } = await v5(broker, t)
  t.equal(connack.properties?.retainAvailable, false)
  publish(raw, 'r/t', { retain: true })
  t.equal((await raw.next('disconnect') as IDisconnectPacket).reasonCode, 0x9a)
})

t.test('zone.external.wildcard_subscription = false and subscription_identifiers = false', async (t) => {
  const broker = await startBroker({ 'zone.external.wildcard_subscription': 'false', 'zone.external.subscription_identifiers': 'false' })
  t.teardown(broker.stop)
  const { raw, connack } = await v5(broker, t)
  t.match(connack.properties, { wildcardSubscriptionAvailable: false, subscriptionIdentifiersAvailable: false })
  raw.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'a/+', qos: 0 }, { topic: 'a/b', qos: 0 }] })
  t.same((await raw.next('suback') as ISubackPacket).granted, [0xa2, 0], 'the wildcard filter alone is refused')
  raw.send({ cmd: 'subscribe', messageId: 2, properties: { subscriptionIdentifier: 5 }, subscriptions: [{ topic: 'c', qos: 0 }] })
  t.equal((await raw.next('disconnect') as IDisconnectPacket).reasonCode, 0xa1)
})

t.test('a message matching two subscriptions with identifiers carries both', async (t) => {
  const broker = await startBroker()
  t.teardown(broker.stop)
  const { raw } = await v5(broker, t)
  raw.send({ cmd: 'subscribe', messageId: 1, properties: { subscriptionIdentifier: 7 }, subscriptions: [{ topic: 'si/+', qos: 0 }] })
  await raw.next('suback')
  raw.send({ cmd: 'subscribe', messageId: 2, properties: { subscriptionIdentifier: 9 }, subscriptions: [{ topic: 'si/b', qos: 0 }] })
  await raw.next('suback')
  const pub = await connect(`mqtt://127.0.0.1:${broker.port()}`, { clientId: 'si-pub' })
  t.teardown(() => closeAll(pub))
  await pub.publishAsync('si/b', 'both')
  const message = await raw.next('publish') as IPublishPacket
  t.same([...[message.properties?.subscriptionIdentifier].flat()].sort(), [7, 9])
  await pub.publishAsync('si/c', 'one')
  t.equal((await raw.next('publish') as IPublishPacket).properties?.subscriptionIdentifier, 7, 'one match, one identifier')
})

t.test('the Will Delay Interval is not forwarded with the will', async (t) => {
  const broker = await startBroker()
  t.teardown(broker.stop)
  const watcher = await connect(`mqtt://127.0.0.1:${broker.port()}`, { clientId: 'will-watch', protocolVersion: 5 })
  t.teardown(() => closeAll(watcher))
  await watcher.subscribeAsync('last/words')
  const { raw } = await v5(broker, t, {
    clientId: 'dying',
    properties: { sessionExpiryInterval: 10 },
    will: { topic: 'last/words', payload: Buffer.from('bye'), qos: 0, retain: false, properties: { willDelayInterval: 1, contentType: 'text/plain' } }
  })
  const got = nextMessages(watcher, 1, 4000)
  raw.end()
  const [will] = await got
  t.equal(will.payload, 'bye')
  t.equal(will.properties?.willDelayInterval, undefined)
  t.equal(will.properties?.contentType, 'text/plain', 'other will properties are kept')
})

t.test('outbound topic aliases up to the client\'s Topic Alias Maximum', async (t) => {
  const broker = await startBroker()
  t.teardown(broker.stop)
  const { raw } = await v5(broker, t, { properties: { topicAliasMaximum: 2 } })
  raw.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'al/#', qos: 1 }] })
  await raw.next('suback')
  const pub = await connect(`mqtt://127.0.0.1:${broker.port()}`, { clientId: 'al-pub' })
  t.teardown(() => closeAll(pub))
  const seen: Array<[string, number | undefined]> = []
  for (const topic of ['al/1', 'al/1', 'al/2', 'al/3', 'al/2']) {
    await pub.publishAsync(topic, topic, { qos: 1 })
    const p = await raw.next('publish') as IPublishPacket
    raw.send({ cmd: 'puback', messageId: p.messageId! })
    seen.push([p.topic, p.properties?.topicAlias])
  }
  t.same(seen, [['al/1', 1], ['', 1], ['al/2', 2], ['al/3', undefined], ['', 2]], 'assigned, reused, none once full')
})

t.test('a message larger than the client\'s Maximum Packet Size is dropped for it and counted', async (t) => {
  const broker = await startBroker()
  t.teardown(broker.stop)
  const dropped: string[] = []
  onMessageDropped(broker.node.engine, (packet, _client, reason) => dropped.push(`${packet.topic}:${reason}`))
  const { raw } = await v5(broker, t, { properties: { maximumPacketSize: 100 } })
  raw.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'mp/#', qos: 1 }] })
  await raw.next('suback')
  const pub = await connect(`mqtt://127.0.0.1:${broker.port()}`, { clientId: 'mp-pub' })
  t.teardown(() => closeAll(pub))
  await pub.publishAsync('mp/big', 'x'.repeat(200), { qos: 1 })
  await pub.publishAsync('mp/small', 'fits', { qos: 1 })
  const p = await raw.next('publish') as IPublishPacket
  t.same([p.topic, p.payload.toString()], ['mp/small', 'fits'], 'only the small one is sent')
  t.same(dropped, ['mp/big:too_large'])
  t.notOk(raw.closed, 'the client stays connected')
})
