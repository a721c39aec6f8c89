// QoS 0/1/2 delivery and downgrade, retained messages, wills (with v5 will
// delay), keepalive and persistent sessions, with MQTT.js (levels 4 and 5) and
// a raw client where the wire matters, against an in-process node.
import t from 'tap'
import mqtt, { type IClientOptions } from 'mqtt'
import type { IConnackPacket, IPublishPacket } from 'mqtt-packet'
import { startBroker } from './helpers/broker.js'
import { closeAll, connect, nextMessages, noMessageWithin, type MqttClient, type Received } from './helpers/mqtt.js'
import { RawClient } from './helpers/raw-client.js'

const broker = await startBroker()
t.teardown(broker.stop)
const url = `mqtt://127.0.0.1:${broker.port()}`

const sleep = async (ms: number): Promise<void> => await new Promise((resolve) => setTimeout(resolve, ms))

async function until (what: string, check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(10)
  }
}

/** Connects and collects every message from the first packet on (a queued message may follow CONNACK at once). */
async function openSession (options: IClientOptions): Promise<{ client: MqttClient, connack: IConnackPacket, messages: Received[] }> {
  const client = mqtt.connect(url, { reconnectPeriod: 0, connectTimeout: 5000, ...options })
  const messages: Received[] = []
  client.on('message', (topic, payload, packet) => messages.push({ topic, payload: payload.toString(), retain: packet.retain, qos: packet.qos }))
  const connack = await new Promise<IConnackPacket>((resolve, reject) => {
    client.once('connect', resolve)
    client.once('error', reject)
    client.once('close', () => reject(new Error('closed before CONNACK')))
  })
  return { client, connack, messages }
}

for (const protocolVersion of [4, 5] as const) {
  t.test(`v${protocolVersion}: QoS 0, 1 and 2 each arrive once, at their QoS`, async (t) => {
    const sub = await connect(url, { clientId: `qos-sub-${protocolVersion}`, protocolVersion })
    const pub = await connect(url, { clientId: `qos-pub-${protocolVersion}`, protocolVersion })
    t.teardown(() => closeAll(sub, pub))
    for (const qos of [0, 1, 2] as const) await sub.subscribeAsync(`qos/${protocolVersion}/${qos}`, { qos })
    const got = nextMessages(sub, 3)
    for (const qos of [0, 1, 2] as const) await pub.publishAsync(`qos/${protocolVersion}/${qos}`, `m${qos}`, { qos })
    const messages = (await got).sort((a, b) => a.qos - b.qos)
    t.same(messages.map((m) => [m.topic, m.payload, m.qos]), [0, 1, 2].map((q) => [`qos/${protocolVersion}/${q}`, `m${q}`, q]))
    t.ok(await noMessageWithin(sub, 300), 'no duplicate follows')
  })

  t.test(`v${protocolVersion}: a QoS 2 publish is downgraded to the subscription's QoS 0 or 1`, async (t) => {
    const sub = await connect(url, { clientId: `down-sub-${protocolVersion}`, protocolVersion })
    const pub = await connect(url, { clientId: `down-pub-${protocolVersion}`, protocolVersion })
    t.teardown(() => closeAll(sub, pub))
    await sub.subscribeAsync({ [`down/${protocolVersion}/0`]: { qos: 0 }, [`down/${protocolVersion}/1`]: { qos: 1 } })
    const got = nextMessages(sub, 2)
    await pub.publishAsync(`down/${protocolVersion}/0`, 'to0', { qos: 2 })
    await pub.publishAsync(`down/${protocolVersion}/1`, 'to1', { qos: 2 })
    const byPayload = Object.fromEntries((await got).map((m) => [m.payload, m.qos]))
    t.same(byPayload, { to0: 0, to1: 1 })
  })
}

t.test('raw QoS 2 inbound: PUBREC/PUBREL/PUBCOMP completes and a dup re-send is delivered once', async (t) => {
  const sub = await connect(url, { clientId: 'raw-q2-sub' })
  const raw = await RawClient.open(broker.port(), 4)
  t.teardown(async () => { raw.end(); await closeAll(sub) })
  await sub.subscribeAsync('raw/q2', { qos: 2 })
  const got: string[] = []
  sub.on('message', (_topic, payload) => got.push(payload.toString()))
  t.equal((await raw.connect({ clientId: 'raw-q2-pub' })).returnCode, 0)

  const publish: IPublishPacket = { cmd: 'publish', topic: 'raw/q2', payload: Buffer.from('once'), qos: 2, messageId: 42, retain: false, dup: false }
  raw.send(publish)
  t.equal((await raw.next('pubrec')).messageId, 42, 'PUBREC for the first send')
  raw.send({ ...publish, dup: true })
  t.equal((await raw.next('pubrec')).messageId, 42, 'PUBREC again for the dup re-send')
  raw.send({ cmd: 'pubrel', messageId: 42 })
  t.equal((await raw.next('pubcomp')).messageId, 42, 'PUBCOMP after PUBREL')
  await until('the message', () => got.length > 0)
  await sleep(500)
  t.same(got, ['once'], 'the subscriber got it exactly once')
  t.same(raw.packets, [], 'the broker sent nothing else')

  // after PUBCOMP the id is free: the same id now carries a new message
  raw.send({ ...publish, payload: Buffer.from('next') })
  t.equal((await raw.next('pubrec')).messageId, 42)
  raw.send({ cmd: 'pubrel', messageId: 42 })
  t.equal((await raw.next('pubcomp')).messageId, 42)
  await until('the second message', () => got.length > 1)
  t.same(got, ['once', 'next'])
})

for (const protocolVersion of [4, 5] as const) {
  t.test(`v${protocolVersion}: a retained message is set, replaced and cleared`, async (t) => {
    const topic = `ret/${protocolVersion}/state`
    const opts = { protocolVersion }
    const pub = await connect(url, { ...opts, clientId: `ret-pub-${protocolVersion}` })
    const live = await connect(url, { ...opts, clientId: `ret-live-${protocolVersion}` })
    const late: MqttClient[] = []
    t.teardown(() => closeAll(pub, live, ...late))
    await live.subscribeAsync(topic, { qos: 1 })
    const liveGot = nextMessages(live, 1)
    await pub.publishAsync(topic, 'v1', { qos: 1, retain: true })
    t.match(await liveGot, [{ payload: 'v1', retain: false }], 'a live subscriber gets it with retain=0')

    /** A new subscriber, listening before it subscribes: resolves with what it got within `ms`. */
    async function lateSubscriber (name: string, ms = 500): Promise<Received[]> {
      const client = await connect(url, { ...opts, clientId: `ret-${name}-${protocolVersion}` })
      late.push(client)
      const got: Received[] = []
      client.on('message', (topic, payload, packet) => got.push({ topic, payload: payload.toString(), retain: packet.retain, qos: packet.qos }))
      await client.subscribeAsync(topic, { qos: 1 })
      await sleep(ms)
      return got
    }
    const first = await lateSubscriber('a')
    t.equal(first.length, 1, 'a later subscriber gets one message')
    t.match(first, [{ topic, payload: 'v1', retain: true, qos: 1 }], 'the retained one, with retain=1')

    await pub.publishAsync(topic, 'v2', { qos: 1, retain: true })
    const second = await lateSubscriber('b')
    t.equal(second.length, 1, 'a later subscriber gets one message')
    t.match(second, [{ payload: 'v2', retain: true }], 'the replacement')

    await pub.publishAsync(topic, '', { qos: 1, retain: true })
    t.same(await lateSubscriber('c'), [], 'after an empty retained publish a later subscriber gets nothing in 500 ms')
  })
}

t.test('a wildcard subscription receives the retained messages of several topics', async (t) => {
  const pub = await connect(url, { clientId: 'wild-pub' })
  const sub = await connect(url, { clientId: 'wild-sub' })
  t.teardown(() => closeAll(pub, sub))
  for (const [topic, payload] of [['wild/a', 'A'], ['wild/b', 'B'], ['wild/c/d', 'CD']]) {
    await pub.publishAsync(topic, payload, { qos: 1, retain: true })
  }
  const got = nextMessages(sub, 3)
  await sub.subscribeAsync('wild/#', { qos: 1 })
  const messages = (await got).sort((a, b) => a.topic.localeCompare(b.topic))
  t.same(messages.map((m) => [m.topic, m.payload, m.retain]), [['wild/a', 'A', true], ['wild/b', 'B', true], ['wild/c/d', 'CD', true]])
  t.ok(await noMessageWithin(sub, 300), 'nothing more')
})

t.test('will: sent when the connection drops without DISCONNECT, not after a clean DISCONNECT', async (t) => {
  const watcher = await connect(url, { clientId: 'will-watcher' })
  await watcher.subscribeAsync('will/#', { qos: 1 })
  const will = (topic: string): IClientOptions['will'] => ({ topic, payload: Buffer.from(`gone ${topic}`), qos: 1, retain: false })

  const dropped = await connect(url, { clientId: 'will-mqttjs', will: will('will/mqttjs') })
  const raw = await RawClient.open(broker.port(), 4)
  const polite = await connect(url, { clientId: 'will-polite', will: will('will/polite') })
  t.teardown(() => { raw.end(); return closeAll(watcher, dropped, polite) })
  t.equal((await raw.connect({ clientId: 'will-raw', will: { topic: 'will/raw', payload: Buffer.from('gone will/raw'), qos: 1, retain: false } })).returnCode, 0)

  let got = nextMessages(watcher, 1)
  dropped.stream.destroy()
  t.match(await got, [{ topic: 'will/mqttjs', payload: 'gone will/mqttjs', qos: 1 }], 'MQTT.js socket destroyed: will sent')
  got = nextMessages(watcher, 1)
  raw.end()
  t.match(await got, [{ topic: 'will/raw', payload: 'gone will/raw' }], 'raw socket closed: will sent')

  await polite.endAsync()
  t.ok(await noMessageWithin(watcher, 500), 'clean DISCONNECT: no will within 500 ms')
})

t.test('v5 will with willDelayInterval 1 arrives after about 1 s, not before', async (t) => {
  const watcher = await connect(url, { clientId: 'delay-watcher', protocolVersion: 5 })
  await watcher.subscribeAsync('delay/will', { qos: 1 })
  const client = await connect(url, {
    clientId: 'delay-client',
    protocolVersion: 5,
    properties: { sessionExpiryInterval: 10 }, // the will waits for the earlier of delay and session end
    will: { topic: 'delay/will', payload: Buffer.from('late'), qos: 1, retain: false, properties: { willDelayInterval: 1 } }
  })
  t.teardown(() => closeAll(watcher, client))
  const got = nextMessages(watcher, 1, 4000)
  const droppedAt = Date.now()
  client.stream.destroy()
  const [message] = await got
  const elapsed = Date.now() - droppedAt
  t.equal(message.payload, 'late')
  t.ok(elapsed >= 950, `not before 1 s (${elapsed} ms)`)
  t.ok(elapsed < 2500, `not much after 1 s (${elapsed} ms)`)
  t.equal(message.properties?.willDelayInterval, undefined, 'the will delay is not forwarded (fixed by the Aedes patch)')
})

t.test('keepalive: a silent client with keepalive 1 is disconnected after 1.5 s, a pinging one is not', async (t) => {
  const silent = await RawClient.open(broker.port(), 4)
  const pinging = await RawClient.open(broker.port(), 4)
  t.teardown(() => { silent.end(); pinging.end() })
  t.equal((await silent.connect({ clientId: 'ka-silent', keepalive: 1 })).returnCode, 0)
  t.equal((await pinging.connect({ clientId: 'ka-pinging', keepalive: 1 })).returnCode, 0)
  const start = Date.now()
  const timer = setInterval(() => pinging.send({ cmd: 'pingreq' }), 500)
  t.teardown(() => clearInterval(timer))
  t.ok(await silent.waitClosed(3500), 'the silent client is disconnected')
  const elapsed = Date.now() - start
  t.ok(elapsed >= 1400 && elapsed <= 3000, `within 1.5–3 s (${elapsed} ms)`)
  await sleep(Math.max(0, 3000 - elapsed))
  t.notOk(pinging.closed, 'the pinging client is still connected after 3 s')
  t.ok(pinging.packets.some((p) => p.cmd === 'pingresp'), 'and was answered with PINGRESP')
})

const sessions: Array<[string, IClientOptions, IClientOptions]> = [
  ['v4 clean=false', { protocolVersion: 4, clean: false }, { protocolVersion: 4, clean: true }],
  ['v5 sessionExpiryInterval 60', { protocolVersion: 5, clean: false, properties: { sessionExpiryInterval: 60 } },
    { protocolVersion: 5, clean: false, properties: { sessionExpiryInterval: 0 } }]
]
for (const [name, persistent, transient] of sessions) {
  t.test(`${name}: a QoS 1 message published while offline is delivered on reconnect, sessionPresent=1`, async (t) => {
    const id = `sess-${persistent.protocolVersion}`
    const topic = `sess/${persistent.protocolVersion}`
    const pub = await connect(url, { clientId: `${id}-pub` })
    const opened: MqttClient[] = [pub]
    t.teardown(() => closeAll(...opened))

    const first = await openSession({ ...persistent, clientId: id })
    opened.push(first.client)
    t.equal(first.connack.sessionPresent, false, 'no session the first time')
    await first.client.subscribeAsync(topic, { qos: 1 })
    await first.client.endAsync()
    await pub.publishAsync(topic, 'queued', { qos: 1 })

    const again = await openSession({ ...persistent, clientId: id })
    opened.push(again.client)
    t.equal(again.connack.sessionPresent, true, 'sessionPresent=1')
    await until('the queued message', () => again.messages.length > 0)
    await sleep(200)
    t.equal(again.messages.length, 1, 'exactly one queued message')
    t.match(again.messages, [{ topic, payload: 'queued', qos: 1 }])
    await again.client.endAsync()

    // control: a session that is not kept gets nothing back
    const transientId = `${id}-transient`
    const gone = await openSession({ ...transient, clientId: transientId })
    opened.push(gone.client)
    await gone.client.subscribeAsync(topic, { qos: 1 })
    await gone.client.endAsync()
    await pub.publishAsync(topic, 'lost', { qos: 1 })
    const back = await openSession({ ...transient, clientId: transientId })
    opened.push(back.client)
    t.equal(back.connack.sessionPresent, false, 'a non-persistent session is not present')
    await sleep(300)
    t.same(back.messages, [], 'and gets no queued message')
  })
}
