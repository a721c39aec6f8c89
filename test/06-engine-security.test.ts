// The three security fixes the Aedes beta lacks (patches/aedes+2.0.0-beta.1+NNN+*.patch):
// prototype-named client ids, the inbound QoS 2 cap, and clean start clearing
// the previous session's inbound QoS 2 state.
import t from 'tap'
import type { IPublishPacket, IDisconnectPacket } from 'mqtt-packet'
import { startBroker } from './helpers/broker.js'
import { closeAll, connect, nextMessages } from './helpers/mqtt.js'
import { RawClient } from './helpers/raw-client.js'

t.test('client ids named like Object.prototype members connect and work (GHSA-52qw-whmv-87c5)', async (t) => {
  const broker = await startBroker()
  t.teardown(broker.stop)
  const url = `mqtt://127.0.0.1:${broker.port()}`
  const watcher = await connect(url, { clientId: 'watcher' })
  t.teardown(() => closeAll(watcher))
  await watcher.subscribeAsync('#', { qos: 1 })
  for (const clientId of ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf']) {
    const client = await connect(url, { clientId, protocolVersion: 5 })
    const got = nextMessages(watcher, 1)
    await client.publishAsync(clientId, 'alive', { qos: 1 })
    const [message] = await got
    t.same([message.topic, message.payload, message.qos], [clientId, 'alive', 1], `${clientId}: connects and publishes`)
    await client.endAsync()
  }
  const again = await connect(url, { clientId: 'constructor' })
  t.ok(again.connected, 'the same id can connect again after it left')
  await again.endAsync()
})

t.test('a topic named like an Object.prototype member keeps the subscriber QoS', async (t) => {
  const broker = await startBroker()
  t.teardown(broker.stop)
  const url = `mqtt://127.0.0.1:${broker.port()}`
  const sub = await connect(url, { clientId: 'proto-sub' })
  const pub = await connect(url, { clientId: 'proto-pub' })
  t.teardown(() => closeAll(sub, pub))
  await sub.subscribeAsync('+', { qos: 1 })
  const got = nextMessages(sub, 1)
  await pub.publishAsync('constructor', 'x', { qos: 1 })
  t.equal((await got)[0].qos, 1)
})

async function publishQos2 (client: RawClient, messageId: number, payload = 'q2'): Promise<void> {
  client.send({ cmd: 'publish', topic: 'cap/t', payload, qos: 2, messageId, retain: false, dup: false } as IPublishPacket)
}

t.test('inbound QoS 2 messages awaiting PUBREL are capped per client (GHSA-5jvp-3p2v-5qgf)', async (t) => {
  const broker = await startBroker({ 'zone.external.max_awaiting_rel': 5 })
  t.teardown(broker.stop)

  t.test('MQTT 3.1.1: the connection is closed past the cap', async (t) => {
    const client = await RawClient.open(broker.port(), 4)
    t.teardown(() => client.end())
    await client.connect({ clientId: 'cap-v4' })
    for (let id = 1; id <= 5; id++) {
      await publishQos2(client, id)
      await client.next('pubrec')
    }
    t.notOk(client.closed, 'five in flight are allowed')
    await publishQos2(client, 6)
    t.ok(await client.waitClosed(), 'the sixth closes the connection')
  })

  t.test('MQTT 5: DISCONNECT 0x93 past the cap', async (t) => {
    const client = await RawClient.open(broker.port(), 5)
    t.teardown(() => client.end())
    await client.connect({ clientId: 'cap-v5' })
    for (let id = 1; id <= 6; id++) await publishQos2(client, id)
    const disconnect = await client.next('disconnect') as IDisconnectPacket
    t.equal(disconnect.reasonCode, 0x93, 'Receive Maximum exceeded')
  })

  t.test('PUBREL frees the slot', async (t) => {
    const client = await RawClient.open(broker.port(), 4)
    t.teardown(() => client.end())
    await client.connect({ clientId: 'cap-rel' })
    for (let id = 1; id <= 20; id++) {
      await publishQos2(client, id)
      await client.next('pubrec')
      client.send({ cmd: 'pubrel', messageId: id })
      await client.next('pubcomp')
    }
    t.notOk(client.closed, 'twenty completed exchanges never hit the cap of five')
  })
})

t.test('clean start clears the previous session\'s inbound QoS 2 state (GHSA-p8r9-qf8w-p73r)', async (t) => {
  const broker = await startBroker()
  t.teardown(broker.stop)
  const sub = await connect(`mqtt://127.0.0.1:${broker.port()}`, { clientId: 'clean-sub' })
  t.teardown(() => closeAll(sub))
  await sub.subscribeAsync('cap/t', { qos: 2 })

  const first = await RawClient.open(broker.port(), 4)
  await first.connect({ clientId: 'q2-client', clean: false })
  let got = nextMessages(sub, 1)
  await publishQos2(first, 7, 'first')
  await first.next('pubrec')
  t.equal((await got)[0].payload, 'first')
  first.end() // never sends PUBREL

  const second = await RawClient.open(broker.port(), 4)
  t.teardown(() => second.end())
  await second.connect({ clientId: 'q2-client', clean: true })
  got = nextMessages(sub, 1)
  await publishQos2(second, 7, 'second')
  await second.next('pubrec')
  t.equal((await got)[0].payload, 'second', 'the new message with a reused id is delivered, not taken for a duplicate')
})
