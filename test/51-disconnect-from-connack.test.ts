// Aedes patch 008: a DISCONNECT with a reason goes out from the CONNACK on, also while a
// resumed session's stored messages are still being written (the engine calls the client
// `connected` only once they all are).
import t from 'tap'
import type { IDisconnectPacket, IPublishPacket } from 'mqtt-packet'
import { startBroker } from './helpers/broker.js'
import { closeAll, connect } from './helpers/mqtt.js'
import { RawClient } from './helpers/raw-client.js'

const STORED = 48
const PAYLOAD = Buffer.alloc(256 * 1024, 0x61)

t.test('a QoS 2 PUBLISH while the stored messages are still going out gets DISCONNECT 0x9B', async (t) => {
  const broker = await startBroker({ 'zone.external.max_qos_allowed': 1, 'zone.external.max_inflight': 0 })
  t.teardown(broker.stop)
  const session = { clientId: 'slow-reader', clean: false, properties: { sessionExpiryInterval: 300 } }

  const first = await RawClient.open(broker.port(), 5)
  await first.connect(session)
  first.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'bulk/#', qos: 1 }] })
  await first.next('suback')
  first.end()
  await first.waitClosed()

  const publisher = await connect(`mqtt://127.0.0.1:${broker.port()}`, { clientId: 'bulk-publisher' })
  t.teardown(() => closeAll(publisher))
  for (let i = 0; i < STORED; i++) await publisher.publishAsync(`bulk/${i}`, PAYLOAD, { qos: 1 })

  // the QoS 2 PUBLISH reaches the broker while it still reads and writes the stored messages
  const resumed = await RawClient.open(broker.port(), 5)
  t.teardown(() => resumed.end())
  const connack = await resumed.connect(session)
  t.equal(connack.sessionPresent, true, 'the session is resumed')
  resumed.send({ cmd: 'publish', topic: 'bulk/x', payload: Buffer.from('x'), qos: 2, messageId: 7, retain: false, dup: false } as IPublishPacket)

  const disconnect = await resumed.next('disconnect', 30_000) as IDisconnectPacket
  t.equal(disconnect.reasonCode, 0x9b, 'DISCONNECT QoS not supported')
})
