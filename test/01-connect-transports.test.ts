// MQTT 3.1, 3.1.1 and 5.0 over TCP, TLS, WebSocket and secure WebSocket,
// with real MQTT.js clients: each combination connects and round-trips a message.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { INSTALL_ROOT } from '../lib/root.js'
import { connInfo } from '../lib/listeners/conn-info.js'
import { engineClient } from '../lib/engine/internals.js'
import { startBroker, type ListenerKind } from './helpers/broker.js'
import { closeAll, connect, nextMessages } from './helpers/mqtt.js'

const ca = readFileSync(join(INSTALL_ROOT, 'etc/certs/cacert.pem'))
const broker = await startBroker({}, ['tcp', 'ssl', 'ws', 'wss'])
t.teardown(broker.stop)

const urls: Record<ListenerKind, () => string> = {
  tcp: () => `mqtt://127.0.0.1:${broker.port('tcp')}`,
  ssl: () => `mqtts://localhost:${broker.port('ssl')}`,
  ws: () => `ws://127.0.0.1:${broker.port('ws')}/mqtt`,
  wss: () => `wss://localhost:${broker.port('wss')}/mqtt`
}

for (const kind of ['tcp', 'ssl', 'ws', 'wss'] as const) {
  for (const protocolVersion of [3, 4, 5] as const) {
    t.test(`MQTT level ${protocolVersion} over ${kind}`, async (t) => {
      const options = {
        protocolVersion,
        protocolId: protocolVersion === 3 ? 'MQIsdp' as const : 'MQTT' as const,
        clientId: `c-${kind}-${protocolVersion}`,
        ca
      }
      const client = await connect(urls[kind](), options)
      t.teardown(() => closeAll(client))
      const seen = engineClient(broker.node.engine, options.clientId)
      t.equal(seen?.version, protocolVersion, 'the broker sees the protocol level the client chose')
      t.equal(connInfo(seen!.conn)?.protocol, `mqtt:${kind}`, 'the connection is recorded on the right listener')
      t.equal(connInfo(seen!.conn)?.peercert, kind === 'ssl' || kind === 'wss' ? 'undefined' : 'nossl')
      await client.subscribeAsync(`t/${kind}/${protocolVersion}`, { qos: 1 })
      const got = nextMessages(client, 1)
      await client.publishAsync(`t/${kind}/${protocolVersion}`, 'hello', { qos: 1 })
      const [message] = await got
      t.equal(message.payload, 'hello')
      t.equal(message.qos, 1)
    })
  }
}

t.test('WebSocket sub-protocol names are answered', async (t) => {
  const { default: WebSocket } = await import('ws')
  for (const protocol of ['mqtt', 'mqttv3.1', 'mqttv3.1.1', 'mqttv5.0']) {
    const ws = new WebSocket(`ws://127.0.0.1:${broker.port('ws')}/mqtt`, [protocol])
    await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject) })
    t.equal(ws.protocol, protocol, `${protocol} is accepted`)
    ws.close()
  }
})

t.test('WebSocket on another path is refused', async (t) => {
  const { default: WebSocket } = await import('ws')
  const ws = new WebSocket(`ws://127.0.0.1:${broker.port('ws')}/other`, ['mqtt'])
  const err = await new Promise<Error>((resolve) => ws.once('error', resolve))
  t.match(err.message, /404/)
})

t.test('TLS with verify_peer records the client certificate', async (t) => {
  const secure = await startBroker({ 'listener.ssl.external.verify': 'verify_peer', 'listener.ssl.external.fail_if_no_peer_cert': 'true' }, ['ssl'])
  t.teardown(secure.stop)
  const client = await connect(`mqtts://localhost:${secure.port('ssl')}`, {
    clientId: 'with-cert',
    ca,
    cert: readFileSync(join(INSTALL_ROOT, 'etc/certs/client-cert.pem')),
    key: readFileSync(join(INSTALL_ROOT, 'etc/certs/client-key.pem'))
  })
  t.teardown(() => closeAll(client))
  const conn = engineClient(secure.node.engine, 'with-cert')!.conn
  t.match(connInfo(conn)?.peercert, /CN=demo-client/)
  await t.rejects(connect(`mqtts://localhost:${secure.port('ssl')}`, { clientId: 'no-cert', ca }), 'a client without a certificate is refused')
})
