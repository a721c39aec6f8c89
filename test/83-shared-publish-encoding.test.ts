// The delivery batch (Aedes patch 195-fan-out-batch) serializes a QoS 0 PUBLISH once and writes the
// same bytes to every subscriber whose packet would be identical. A wrong shared buffer shows up as
// a subscriber getting another's packet: here subscribers of one message differ in protocol version,
// subscription identifier, retain-as-published, no-local, granted QoS and topic aliases, and each
// must get exactly its own packet, for messages that reach the broker in one TCP segment (one batch).
// Order is checked per QoS level of the published message: the engine stores a QoS 1 message before
// routing it, so a QoS 0 message sent after it may overtake it (MQTT orders messages of one QoS).
import t from 'tap'
import mqttPacket, { type IPublishPacket, type Packet } from 'mqtt-packet'
import { startBroker } from './helpers/broker.js'
import { RawClient } from './helpers/raw-client.js'

const TOPIC = 'enc/t'

interface Sub { name: string, version: 3 | 4 | 5, qos: 0 | 1, si?: number, rap?: boolean, nl?: boolean, aliases?: number }

async function subscriber (port: number, sub: Sub, clientId: string): Promise<RawClient> {
  const raw = await RawClient.open(port, sub.version)
  const connack = await raw.connect({ clientId, ...(sub.aliases !== undefined ? { properties: { topicAliasMaximum: sub.aliases } } : {}) })
  if (connack.returnCode !== undefined && connack.returnCode !== 0) throw new Error(`${sub.name}: CONNACK ${connack.returnCode}`)
  raw.send({
    cmd: 'subscribe',
    messageId: 1,
    subscriptions: [{ topic: TOPIC, qos: sub.qos, ...(sub.version === 5 ? { rap: sub.rap === true, nl: sub.nl === true, rh: 0 } : {}) }],
    ...(sub.si !== undefined ? { properties: { subscriptionIdentifier: sub.si } } : {})
  } as Packet)
  await raw.next('suback')
  return raw
}

/** The PUBLISH packets a client has received so far, acknowledging QoS 1 ones. */
async function publishes (raw: RawClient, count: number): Promise<IPublishPacket[]> {
  const got: IPublishPacket[] = []
  for (let i = 0; i < count; i++) {
    const p = await raw.next('publish', 20_000) as IPublishPacket
    if (p.qos > 0) raw.send({ cmd: 'puback', messageId: p.messageId as number })
    got.push(p)
  }
  return got
}

/** What a test compares: the fields the wire carries for this subscriber. */
function shape (p: IPublishPacket): Record<string, unknown> {
  const props = p.properties ?? {}
  return {
    topic: p.topic,
    payload: p.payload.toString(),
    qos: p.qos,
    retain: p.retain,
    dup: p.dup,
    hasMessageId: p.messageId !== undefined,
    subscriptionIdentifier: props.subscriptionIdentifier,
    topicAlias: props.topicAlias,
    userProperties: props.userProperties,
    expiry: props.messageExpiryInterval !== undefined
  }
}

t.test('one publish, subscribers whose packets differ: each gets its own', async (t) => {
  const broker = await startBroker()
  t.teardown(() => broker.stop())
  const port = broker.port()
  const subs: Sub[] = [
    { name: 'v5 si 7', version: 5, qos: 0, si: 7 },
    { name: 'v5 si 9 rap', version: 5, qos: 0, si: 9, rap: true },
    { name: 'v5 plain', version: 5, qos: 0 },
    { name: 'v5 plain 2', version: 5, qos: 0 },
    { name: 'v5 aliases', version: 5, qos: 0, aliases: 4 },
    { name: 'v5 QoS 1', version: 5, qos: 1 },
    { name: 'v3.1.1', version: 4, qos: 0 },
    { name: 'v3.1.1 QoS 1', version: 4, qos: 1 },
    { name: 'v3.1', version: 3, qos: 0 }
  ]
  const clients = await Promise.all(subs.map(async (s, i) => await subscriber(port, s, `enc-sub-${i}`)))
  t.teardown(() => { for (const c of clients) c.end() })
  // the publisher is subscribed too, with no-local: it must not get its own messages
  const publisher = await subscriber(port, { name: 'publisher', version: 5, qos: 1, nl: true }, 'enc-pub')
  t.teardown(() => publisher.end())

  // three messages in one TCP segment, so that they are delivered in one batch: QoS 1 retained with
  // properties, QoS 0, QoS 1 with another payload of the same length
  const messages: IPublishPacket[] = [
    { cmd: 'publish', topic: TOPIC, payload: Buffer.from('first'), qos: 1, messageId: 10, retain: true, dup: false, properties: { userProperties: { k: 'v' }, messageExpiryInterval: 600 } },
    { cmd: 'publish', topic: TOPIC, payload: Buffer.from('second'), qos: 0, retain: false, dup: false },
    { cmd: 'publish', topic: TOPIC, payload: Buffer.from('third!'), qos: 1, messageId: 11, retain: false, dup: false }
  ]
  publisher.socket.write(Buffer.concat(messages.map((m) => mqttPacket.generate(m, { protocolVersion: 5 }))))

  const received = await Promise.all(clients.map(async (c) => await publishes(c, messages.length)))
  const expected = (sub: Sub, m: IPublishPacket, index: number): Record<string, unknown> => {
    const v5 = sub.version === 5
    const qos = Math.min(sub.qos, m.qos)
    // an alias is given with the first message; the next ones carry it without the topic
    const aliased = v5 && sub.aliases !== undefined
    return {
      topic: aliased && index > 0 ? '' : TOPIC,
      payload: m.payload.toString(),
      qos,
      retain: v5 && sub.rap === true ? m.retain : false,
      dup: false,
      hasMessageId: qos > 0,
      subscriptionIdentifier: v5 ? sub.si : undefined,
      topicAlias: aliased ? 1 : undefined,
      userProperties: v5 ? m.properties?.userProperties : undefined,
      expiry: v5 && m.properties?.messageExpiryInterval !== undefined
    }
  }
  const byPayload = (a: Record<string, unknown>, b: Record<string, unknown>): number => String(a.payload).localeCompare(String(b.payload))
  subs.forEach((sub, i) => {
    // the alias is given with whichever message reaches the subscriber first
    const got = received[i].map(shape)
    const want = messages.map((m) => expected(sub, m, got.findIndex((g) => g.payload === m.payload.toString())))
    t.same(got.sort(byPayload), want.sort(byPayload), `${sub.name}: its own packets`)
  })
  t.equal(publisher.packets.filter((p) => p.cmd === 'publish').length, 0, 'no-local: the publisher got none of its own messages')
})

t.test('many messages to many subscribers in one batch: every subscriber gets every message once, in order per QoS', async (t) => {
  const broker = await startBroker()
  t.teardown(() => broker.stop())
  const port = broker.port()
  const subs: Sub[] = Array.from({ length: 12 }, (_, i) => {
    const version = ([3, 4, 5] as const)[i % 3]
    return { name: `sub ${i}`, version, qos: (i % 2) as 0 | 1, si: version === 5 && i % 4 === 0 ? i + 1 : undefined }
  })
  const clients = await Promise.all(subs.map(async (s, i) => await subscriber(port, s, `many-sub-${i}`)))
  t.teardown(() => { for (const c of clients) c.end() })
  const publisher = await RawClient.open(port, 4)
  t.teardown(() => publisher.end())
  await publisher.connect({ clientId: 'many-pub' })
  const COUNT = 200
  const messages: IPublishPacket[] = Array.from({ length: COUNT }, (_, i) => ({
    cmd: 'publish', topic: TOPIC, payload: Buffer.from(`m${i}`), qos: (i % 3 === 0 ? 1 : 0) as 0 | 1, messageId: i + 1, retain: false, dup: false
  }))
  publisher.socket.write(Buffer.concat(messages.map((m) => mqttPacket.generate(m))))
  const received = await Promise.all(clients.map(async (c) => await publishes(c, COUNT)))
  const qosOf = new Map(messages.map((m) => [m.payload.toString(), m.qos]))
  subs.forEach((sub, i) => {
    const got = received[i]
    for (const qos of [0, 1]) {
      t.same(got.map((p) => p.payload.toString()).filter((p) => qosOf.get(p) === qos), messages.filter((m) => m.qos === qos).map((m) => m.payload.toString()),
        `${sub.name} (v${sub.version}, QoS ${sub.qos}): every message published at QoS ${qos}, once, in order`)
    }
    t.same(got.map((p) => p.qos), got.map((p) => Math.min(qosOf.get(p.payload.toString()) ?? -1, sub.qos)), `${sub.name}: each at the lower of the message's and its subscription's QoS`)
    t.ok(got.every((p) => p.properties?.subscriptionIdentifier === (sub.version === 5 ? sub.si : undefined)), `${sub.name}: its own subscription identifier or none`)
  })
})
