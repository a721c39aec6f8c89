// Outbound flow control and session queues: zone.external.max_inflight, the
// MQTT 5 client's Receive Maximum, and zone.external.max_mqueue_len for clean
// and persistent sessions — observed on the wire with a raw client.
import t from 'tap'
import type { IPublishPacket } from 'mqtt-packet'
import { startBroker, type TestBroker } from './helpers/broker.js'
import { closeAll, connect, type MqttClient } from './helpers/mqtt.js'
import { RawClient } from './helpers/raw-client.js'
import { waitFor } from './helpers/cluster.js'
import { onMessageDropped } from '../lib/engine/internals.js'

async function publisher (broker: TestBroker, t: { teardown: (fn: () => unknown) => void }): Promise<MqttClient> {
  const client = await connect(`mqtt://127.0.0.1:${broker.port()}`, { clientId: `pub-${Math.random()}` })
  t.teardown(() => closeAll(client))
  return client
}

async function subscribeRaw (client: RawClient, topic: string): Promise<void> {
  client.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic, qos: 1 }] })
  await client.next('suback')
}

/** Waits `ms`, then takes every PUBLISH received so far. */
async function publishesAfter (client: RawClient, ms: number): Promise<IPublishPacket[]> {
  await new Promise((resolve) => setTimeout(resolve, ms))
  const got = client.packets.filter((p): p is IPublishPacket => p.cmd === 'publish')
  client.packets.splice(0, client.packets.length, ...client.packets.filter((p) => p.cmd !== 'publish'))
  return got
}

function ack (client: RawClient, packets: IPublishPacket[]): void {
  for (const p of packets) client.send({ cmd: 'puback', messageId: p.messageId! })
}

const payloads = (packets: IPublishPacket[]): string[] => packets.map((p) => p.payload.toString())
const numbered = (from: number, to: number): string[] => Array.from({ length: to - from + 1 }, (_, i) => `m${from + i}`)

t.test('zone.external.max_inflight: at most that many unacknowledged QoS 1 messages', async (t) => {
  const broker = await startBroker({ 'zone.external.max_inflight': 2 })
  t.teardown(broker.stop)
  const sub = await RawClient.open(broker.port(), 4)
  t.teardown(() => sub.end())
  await sub.connect({ clientId: 'window-sub' })
  await subscribeRaw(sub, 'w/t')
  const pub = await publisher(broker, t)
  for (let i = 1; i <= 10; i++) await pub.publishAsync('w/t', `m${i}`, { qos: 1 })

  let batch = await publishesAfter(sub, 300)
  t.same(payloads(batch), ['m1', 'm2'], 'two in flight, the rest wait')
  const received = [...batch]
  while (received.length < 10) {
    ack(sub, batch)
    batch = await publishesAfter(sub, 100)
    t.ok(batch.length <= 2, `never more than two after an ack (${batch.length})`)
    if (batch.length === 0) break
    received.push(...batch)
  }
  t.same(payloads(received), numbered(1, 10), 'every message arrives, in order')
})

t.test('MQTT 5 Receive Maximum 2 with 10 queued messages', async (t) => {
  const broker = await startBroker()
  t.teardown(broker.stop)
  const sub = await RawClient.open(broker.port(), 5)
  t.teardown(() => sub.end())
  await sub.connect({ clientId: 'rm-sub', properties: { receiveMaximum: 2 } })
  await subscribeRaw(sub, 'rm/t')
  const pub = await publisher(broker, t)
  for (let i = 1; i <= 10; i++) await pub.publishAsync('rm/t', `m${i}`, { qos: 1 })
  const first = await publishesAfter(sub, 300)
  t.same(payloads(first), ['m1', 'm2'], 'the broker honours the client\'s Receive Maximum')
  ack(sub, first.slice(0, 1))
  t.same(payloads(await publishesAfter(sub, 200)), ['m3'], 'one ack, one more message')
})

t.test('zone.external.max_mqueue_len bounds what waits for a clean session', async (t) => {
  const broker = await startBroker({ 'zone.external.max_inflight': 1, 'zone.external.max_mqueue_len': 3 })
  t.teardown(broker.stop)
  const dropped: string[] = []
  onMessageDropped(broker.node.engine, (packet) => { dropped.push(packet.payload.toString()) })
  const sub = await RawClient.open(broker.port(), 4)
  t.teardown(() => sub.end())
  await sub.connect({ clientId: 'mq-sub' })
  await subscribeRaw(sub, 'mq/t')
  const pub = await publisher(broker, t)
  for (let i = 1; i <= 10; i++) await pub.publishAsync('mq/t', `m${i}`, { qos: 1 })
  const received: IPublishPacket[] = []
  for (let round = 0; round < 10; round++) {
    const batch = await publishesAfter(sub, round === 0 ? 300 : 100)
    received.push(...batch)
    ack(sub, batch)
  }
  t.same(payloads(received), numbered(1, 4), 'one in flight and three queued are delivered')
  t.same(dropped, numbered(5, 10), 'the rest are dropped and reported')
})

t.test('zone.external.max_mqueue_len bounds an offline persistent session', async (t) => {
  const broker = await startBroker({ 'zone.external.max_inflight': 2, 'zone.external.max_mqueue_len': 3 })
  t.teardown(broker.stop)
  const url = `mqtt://127.0.0.1:${broker.port()}`
  const first = await connect(url, { clientId: 'offline-sub', clean: false })
  await first.subscribeAsync('off/t', { qos: 1 })
  await first.endAsync()
  const pub = await publisher(broker, t)
  for (let i = 1; i <= 10; i++) await pub.publishAsync('off/t', `m${i}`, { qos: 1 })
  t.equal(broker.node.queues.length('offline-sub'), 5, 'the store holds max_mqueue_len + max_inflight')

  const got: string[] = []
  const again = await connect(url, { clientId: 'offline-sub', clean: false })
  t.teardown(() => closeAll(again))
  again.on('message', (_topic, payload) => got.push(payload.toString()))
  // keyed on the five arriving (a loaded machine may take seconds), then a pause in which a sixth would show
  await waitFor(() => got.length >= 5, 30_000, 'five messages after reconnecting')
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.same(got, numbered(1, 5), 'the first five are delivered after reconnecting, in order')
  await waitFor(() => broker.node.queues.length('offline-sub') === 0, 30_000, 'the store emptied by the acknowledgements')
  t.equal(broker.node.queues.length('offline-sub'), 0, 'acknowledged messages leave the store')
})
