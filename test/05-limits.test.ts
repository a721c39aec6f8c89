// Limits from etc/broker.conf, each observed by real clients: connections and
// connection rate per listener, packet size, client id length, subscriptions
// per client, anonymous access and the retainer limits.
import t from 'tap'
import type { IDisconnectPacket, IPublishPacket, ISubackPacket, ISubscribePacket } from 'mqtt-packet'
import { RETAINER, startBroker } from './helpers/broker.js'
import { closeAll, connect, nextMessages, type MqttClient } from './helpers/mqtt.js'
import { RawClient } from './helpers/raw-client.js'

t.test('max_connections refuses extra clients and keeps the others', async (t) => {
  const broker = await startBroker({ 'listener.tcp.external.max_connections': 3 })
  t.teardown(broker.stop)
  const url = `mqtt://127.0.0.1:${broker.port()}`
  const clients = await Promise.all([1, 2, 3].map(async (i) => await connect(url, { clientId: `mc-${i}` })))
  t.teardown(() => closeAll(...clients))
  const v4 = await RawClient.open(broker.port(), 4)
  t.teardown(() => v4.end())
  t.equal((await v4.connect({ clientId: 'mc-4' })).returnCode, 3, 'MQTT 3.1.1: the fourth is refused, server unavailable')
  t.ok(await v4.waitClosed(), '…and closed')
  const v5 = await RawClient.open(broker.port(), 5)
  t.teardown(() => v5.end())
  t.equal((await v5.connect({ clientId: 'mc-5v5' })).reasonCode, 0x97, 'MQTT 5: quota exceeded')
  t.ok(clients.every((c) => c.connected), 'the first three stay connected')
  await clients[0].endAsync()
  await new Promise((resolve) => setTimeout(resolve, 50))
  const again = await connect(url, { clientId: 'mc-5' })
  t.ok(again.connected, 'a place freed by a disconnect can be taken')
  await again.endAsync()
  t.equal(broker.node.listeners[0].gate.counters.refused, 2)
})

t.test('over max_conn_rate with a full waiting line: MQTT 5 CONNACK 0x89 server busy', async (t) => {
  const broker = await startBroker({ 'listener.tcp.external.max_conn_rate': 1 })
  t.teardown(broker.stop)
  // one token, then at most ten seconds' worth (10) wait; the twelfth is refused
  const waiting = await Promise.all(Array.from({ length: 11 }, async () => await RawClient.open(broker.port(), 5)))
  t.teardown(() => { for (const c of waiting) c.end() })
  const busy = await RawClient.open(broker.port(), 5)
  t.teardown(() => busy.end())
  t.equal((await busy.connect({ clientId: 'busy' })).reasonCode, 0x89)
  t.equal((await waiting[0].connect({ clientId: 'first' })).reasonCode, 0, 'the first, with the token, is accepted')
})

t.test('max_conn_rate spaces out accepts without dropping anyone', async (t) => {
  const broker = await startBroker({ 'listener.tcp.external.max_conn_rate': 10 })
  t.teardown(broker.stop)
  const url = `mqtt://127.0.0.1:${broker.port()}`
  const started = Date.now()
  const times: number[] = []
  const clients = await Promise.all(Array.from({ length: 25 }, async (_, i) => {
    const client = await connect(url, { clientId: `rate-${i}`, connectTimeout: 10_000 })
    times.push(Date.now() - started)
    return client
  }))
  t.teardown(() => closeAll(...clients))
  times.sort((a, b) => a - b)
  t.equal(clients.filter((c) => c.connected).length, 25, 'all 25 connect')
  t.ok(times[9] < 700, `the first ten (one second's burst) connect at once (${times[9]} ms)`)
  t.ok(times[24] >= 1300, `the last waits for tokens: 15 more at 10/s take about 1.5 s (${times[24]} ms)`)
})

t.test('a packet over mqtt.max_packet_size ends the connection; the node stays up', async (t) => {
  const broker = await startBroker({ 'mqtt.max_packet_size': '1KB' })
  t.teardown(broker.stop)
  const big = Buffer.alloc(2048, 'x')

  const v5 = await RawClient.open(broker.port(), 5)
  t.teardown(() => v5.end())
  const connack = await v5.connect({ clientId: 'big-v5' })
  t.equal(connack.properties?.maximumPacketSize, 1024, 'CONNACK advertises the limit')
  v5.send({ cmd: 'publish', topic: 'big', payload: big, qos: 0, retain: false, dup: false } as IPublishPacket)
  const disconnect = await v5.next('disconnect') as IDisconnectPacket
  t.equal(disconnect.reasonCode, 0x95, 'MQTT 5: DISCONNECT Packet too large')

  const v3 = await RawClient.open(broker.port(), 4)
  t.teardown(() => v3.end())
  await v3.connect({ clientId: 'big-v3' })
  v3.send({ cmd: 'publish', topic: 'big', payload: big, qos: 0, retain: false, dup: false } as IPublishPacket)
  t.ok(await v3.waitClosed(), 'MQTT 3.1.1: the connection is closed')

  const fine = await connect(`mqtt://127.0.0.1:${broker.port()}`, { clientId: 'after-big' })
  t.ok(fine.connected, 'the node still accepts clients')
  await fine.endAsync()
})

t.test('mqtt.max_clientid_len rejects longer client ids', async (t) => {
  const broker = await startBroker({ 'mqtt.max_clientid_len': 30 })
  t.teardown(broker.stop)
  const v5 = await RawClient.open(broker.port(), 5)
  t.teardown(() => v5.end())
  t.equal((await v5.connect({ clientId: 'x'.repeat(31) })).reasonCode, 0x85, 'MQTT 5: Client Identifier not valid')
  const v4 = await RawClient.open(broker.port(), 4)
  t.teardown(() => v4.end())
  t.equal((await v4.connect({ clientId: 'x'.repeat(31) })).returnCode, 2, 'MQTT 3.1.1: identifier rejected')
  const ok = await RawClient.open(broker.port(), 4)
  t.teardown(() => ok.end())
  t.equal((await ok.connect({ clientId: 'x'.repeat(30) })).returnCode, 0, 'thirty characters are fine')
})

t.test('zone.external.max_subscriptions refuses subscriptions past the limit', async (t) => {
  const broker = await startBroker({ 'zone.external.max_subscriptions': 2 })
  t.teardown(broker.stop)
  const client = await RawClient.open(broker.port(), 4)
  t.teardown(() => client.end())
  await client.connect({ clientId: 'subs' })
  let messageId = 0
  const granted = async (topic: string): Promise<number> => {
    client.send({ cmd: 'subscribe', messageId: ++messageId, subscriptions: [{ topic, qos: 1 }] } as ISubscribePacket)
    return ((await client.next('suback')) as ISubackPacket).granted[0] as number
  }
  t.equal(await granted('a'), 1)
  t.equal(await granted('b'), 1)
  t.equal(await granted('c'), 128, 'the third is refused')
  t.equal(await granted('a'), 1, 'resubscribing to a held filter is not a new subscription')
})

t.test('mqtt.allow_anonymous = false refuses clients without a user name', async (t) => {
  const broker = await startBroker({ 'mqtt.allow_anonymous': 'false' })
  t.teardown(broker.stop)
  const raw = await RawClient.open(broker.port(), 4)
  t.teardown(() => raw.end())
  t.equal((await raw.connect({ clientId: 'anon' })).returnCode, 5, 'not authorized')
})

t.test('retainer limits', async (t) => {
  // the retainer plugin's settings (etc/plugins/broker_retainer.conf)
  const broker = await startBroker({}, ['tcp'], undefined, { plugins: { [RETAINER]: { 'retainer.max_payload_size': 10, 'retainer.max_retained_messages': 2, 'retainer.expiry_interval': 1 } } })
  t.teardown(broker.stop)
  const url = `mqtt://127.0.0.1:${broker.port()}`
  const pub = await connect(url, { clientId: 'ret-pub' })
  t.teardown(() => closeAll(pub))
  const retained = async (topic: string): Promise<string[]> => {
    const sub: MqttClient = await connect(url, { clientId: `ret-sub-${Math.random()}` })
    try {
      const got: string[] = []
      sub.on('message', (_t, payload) => got.push(payload.toString()))
      await sub.subscribeAsync(topic)
      await new Promise((resolve) => setTimeout(resolve, 200))
      return got
    } finally {
      await sub.endAsync()
    }
  }
  await pub.publishAsync('r/big', 'x'.repeat(11), { qos: 1, retain: true })
  t.same(await retained('r/big'), [], 'a payload over max_payload_size is not retained')

  const live = await connect(url, { clientId: 'ret-live' })
  t.teardown(() => closeAll(live))
  await live.subscribeAsync('r/#')
  const delivered = nextMessages(live, 1)
  await pub.publishAsync('r/big', 'y'.repeat(11), { qos: 1, retain: true })
  t.equal((await delivered)[0].payload, 'y'.repeat(11), '…but it is still delivered to subscribers')

  await pub.publishAsync('r/1', 'one', { qos: 1, retain: true })
  await pub.publishAsync('r/2', 'two', { qos: 1, retain: true })
  await pub.publishAsync('r/3', 'three', { qos: 1, retain: true })
  t.same((await retained('r/+')).sort(), ['one', 'two'], 'only max_retained_messages are kept')
  await pub.publishAsync('r/1', 'uno', { qos: 1, retain: true })
  t.same((await retained('r/1')), ['uno'], 'a kept topic can be replaced at the limit')

  await new Promise((resolve) => setTimeout(resolve, 1100))
  t.same(await retained('r/+'), [], 'retained messages expire after retainer.expiry_interval')
})

t.test('WebSocket max_clients refuses extra clients', async (t) => {
  const broker = await startBroker({ 'listener.ws.external.max_clients': 2 }, ['ws'])
  t.teardown(broker.stop)
  const url = `ws://127.0.0.1:${broker.port('ws')}/mqtt`
  const clients = [await connect(url, { clientId: 'ws-1' }), await connect(url, { clientId: 'ws-2' })]
  t.teardown(() => closeAll(...clients))
  await t.rejects(connect(url, { clientId: 'ws-3', connectTimeout: 2000 }), 'the third is refused')
  t.ok(clients.every((c) => c.connected), 'the first two stay connected')
})

t.test('zone.external.session_expiry_interval ends persistent sessions of MQTT 3.x and caps MQTT 5', async (t) => {
  const broker = await startBroker({ 'zone.external.session_expiry_interval': 1 })
  t.teardown(broker.stop)
  const url = `mqtt://127.0.0.1:${broker.port()}`
  const v4 = await connect(url, { clientId: 'expiring-v4', clean: false })
  await v4.subscribeAsync('exp/t', { qos: 1 })
  await v4.endAsync()
  await new Promise((resolve) => setTimeout(resolve, 300))
  const soon = await RawClient.open(broker.port(), 4)
  t.equal((await soon.connect({ clientId: 'expiring-v4', clean: false })).sessionPresent, true, 'within the interval the session is there')
  soon.end()

  const raw = await RawClient.open(broker.port(), 5)
  t.teardown(() => raw.end())
  const connack = await raw.connect({ clientId: 'expiring-v5', properties: { sessionExpiryInterval: 3600 } })
  t.equal(connack.properties?.sessionExpiryInterval, 1, 'MQTT 5: CONNACK tells the client the capped interval')
  raw.end()

  await new Promise((resolve) => setTimeout(resolve, 1500))
  const late = await RawClient.open(broker.port(), 4)
  t.teardown(() => late.end())
  t.equal((await late.connect({ clientId: 'expiring-v4', clean: false })).sessionPresent, false, 'MQTT 3.1.1: the session expired')
})
