// A client is online from the accepted CONNACK on: the management API lists
// it, finds it, subscribes it and kicks it while the engine is still replaying
// its session's queue. That replay ends only when the client has read what it
// was sent, so a persistent client that reads slowly (or not at all) after a
// long absence used to be a connected client the API called "not online" (404,
// code 112) for as long as it did not read. In a cluster the replay reads the
// shared store, and a client asked about right after its CONNACK met the same
// gap (CI: POST /mqtt/subscribe through another node, 404).
import t from 'tap'
import { startPluginNode } from '../lib/plugin-kit/testing.js'
import { RawClient } from './helpers/raw-client.js'

const QUEUED = 400
const PAYLOAD = Buffer.alloc(64 * 1024, 'q')

const node = await startPluginNode({ plugin: 'broker_management' })
t.teardown(node.stop)

t.test('a slow reader replaying a 25 MB queue is listed, subscribed and kicked by the API', async (t) => {
  // the session: subscribed at QoS 1, then away while QUEUED × 64 kB messages are stored for it
  const first = await node.mqtt({ clientId: 'slow-reader', clean: false })
  await first.subscribeAsync('slow/#', { qos: 1 })
  await first.endAsync()
  const publisher = await node.mqtt({ clientId: 'slow-publisher' })
  for (let i = 0; i < QUEUED; i++) await publisher.publishAsync('slow/q', PAYLOAD, { qos: 1 })

  const raw = await RawClient.open(node.port())
  t.teardown(() => raw.socket.destroy())
  const connack = await raw.connect({ clientId: 'slow-reader', clean: false })
  t.match(connack, { returnCode: 0, sessionPresent: true })
  raw.socket.pause() // reads nothing more: the replay stalls once the socket's buffers are full

  const listed = await node.http('GET', '/connections/slow-reader')
  t.match(listed, { status: 200, body: [{ client_id: 'slow-reader', clean_start: false }] }, 'found by id')
  const all = await node.http('GET', '/connections/')
  t.ok((all.body as { items: Array<{ client_id: string }> }).items.some((c) => c.client_id === 'slow-reader'), 'in the list')
  t.match(await node.http('POST', '/mqtt/subscribe', { client_id: 'slow-reader', topic: 'more/#', qos: 1 }), { status: 200, body: { code: 0 } }, 'subscribed on its behalf')
  const subscriptions = (await node.http('GET', '/subscriptions/slow-reader')).body as Array<{ topic: string }>
  t.same(subscriptions.map((s) => s.topic).sort(), ['more/#', 'slow/#'], 'its subscriptions, the new one with them')

  t.equal((await node.http('DELETE', '/connections/slow-reader')).status, 200, 'kicked')
  raw.socket.resume()
  t.ok(await raw.waitClosed(15_000), 'its connection closed')
  t.match(await node.http('GET', '/connections/slow-reader'), { body: [] }, 'not listed once gone')
  t.match(await node.http('DELETE', '/connections/slow-reader'), { status: 404, body: { code: 112 } }, 'not online any more')
})
