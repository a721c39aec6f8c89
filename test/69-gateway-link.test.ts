// Issue 18's foundation: a protocol gateway's client is an in-process MQTT
// connection to the engine (`ctx.gateway.connect`), spoken to by the kit's
// GatewayClient. The engine treats it as any client: listed with the
// gateway's proto_name, proto_ver, address and port, authenticated,
// authorized, counted, kicked (the gateway is told why), its will published
// when the link drops, its links closed when the plugin unloads. The
// fixture plugin of test/fixtures/gateway-plugins opens the links; MQTT.js
// is on the other side.
import { join } from 'node:path'
import t from 'tap'
import { startPluginNode, type PluginNode } from '../lib/plugin-kit/testing.js'
import { GatewayLinkClosed } from '../lib/plugin-kit/index.js'
import { LinkEnd } from '../lib/plugins/gateway-links.js'
import type { Probe, ProbeClient } from './fixtures/gateway-plugins/broker_fixture_gateway/index.js'
import { nextMessages } from './helpers/mqtt.js'

const PLUGIN = 'broker_fixture_gateway'
const FIXTURES = join(import.meta.dirname, 'fixtures', 'gateway-plugins')

let node: PluginNode

async function until (what: string, ready: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; !await ready(); await new Promise((resolve) => setTimeout(resolve, 20))) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`)
  }
}

const probe = (): Probe => node.node.plugins.api(PLUGIN) as Probe

async function connected (clientId: string, options: Parameters<ProbeClient['client']['connect']>[0] | object = {}, connection = {}): Promise<ProbeClient> {
  const opened = probe().open(connection)
  const connack = await opened.client.connect({ clientId, ...options })
  if (connack.reasonCode !== 0) throw new Error(`refused: ${connack.reason}`)
  return opened
}

async function row<T> (path: string): Promise<T | undefined> {
  const { body } = await node.http('GET', path)
  return (body as { data?: T[] }).data?.[0] ?? (body as T[])[0]
}

t.before(async () => {
  node = await startPluginNode({ plugin: PLUGIN, pluginDirs: [FIXTURES], withApi: true, node: { 'zone.external.max_inflight': 4, 'mqtt.max_clientid_len': 64 } })
})
t.teardown(async () => await node.stop())

t.test('listed as the gateway says: proto_name, proto_ver, the peer\'s address and port, the keep-alive; counted in bytes', async (t) => {
  const bytesBefore = (await row<Record<string, number>>(`/nodes/${node.node.name}/metrics/`) ?? {})['bytes/received'] ?? 0
  const gw = await connected('gw-listed', { username: 'dev', keepalive: 30 })
  gw.link.countBytes(1000, 10)
  const listed = await row<Record<string, unknown>>('/connections/gw-listed')
  t.match(listed, { client_id: 'gw-listed', proto_name: 'PROBE', proto_ver: 3, ipaddress: '192.0.2.7', port: 5683, username: 'dev', keepalive: 30, zone: 'external', clean_start: true })
  const { body } = await node.http('GET', `/nodes/${node.node.name}/metrics/`)
  t.ok((body as Record<string, number>)['bytes/received'] >= bytesBefore + 1000, 'the gateway\'s wire bytes count')
  const mqtt = await node.mqtt({ clientId: 'plain' })
  t.match(await row('/connections/plain'), { proto_name: 'MQTT', proto_ver: 4 }, 'an MQTT client as before')
  await mqtt.endAsync()
  gw.client.disconnect()
  await until('gone', () => gw.closed.length === 1)
  t.same(gw.closed, [{ reason: 'closed' }], 'a normal DISCONNECT: the link ends without a reason from the engine')
})

t.test('QoS 0, 1 and 2 both ways; subscription identifiers; acknowledged when the gateway says', async (t) => {
  const mqtt = await node.mqtt({ clientId: 'peer', protocolVersion: 5 })
  await mqtt.subscribeAsync('up/#', { qos: 2 })
  const gw = await connected('gw-qos')
  const arrived = nextMessages(mqtt, 3, 15_000)
  t.equal(await gw.client.publish({ topic: 'up/0', payload: 'zero' }), 0)
  t.equal(await gw.client.publish({ topic: 'up/1', payload: 'one', qos: 1, userProperties: { k: 'v' } }), 0)
  t.equal(await gw.client.publish({ topic: 'up/2', payload: Buffer.from('two'), qos: 2, retain: false }), 0)
  const got = await arrived
  t.same(got.map((m) => [m.topic, m.payload, m.qos]), [['up/0', 'zero', 0], ['up/1', 'one', 1], ['up/2', 'two', 2]])

  t.same(await gw.client.subscribe([{ topic: 'down/#', qos: 2 }], 7), [2])
  await mqtt.publishAsync('down/1', 'd1', { qos: 1, properties: { userProperties: { a: 'b' } } })
  await mqtt.publishAsync('down/2', 'd2', { qos: 2 })
  await until('two messages', () => gw.messages.length === 2)
  t.match(gw.messages.map((m) => m.message), [
    { topic: 'down/1', qos: 1, subscriptionIds: [7], userProperties: { a: 'b' } },
    { topic: 'down/2', qos: 2, subscriptionIds: [7] }
  ])
  const inflight = async (): Promise<number> => (await row<{ inflight_len: number }>('/sessions/gw-qos'))!.inflight_len
  t.equal(await inflight(), 2, 'held until the gateway acknowledges')
  for (const { ack } of gw.messages) ack()
  await until('acknowledged (PUBACK, PUBREC / PUBREL / PUBCOMP)', async () => await inflight() === 0)
  t.same(await gw.client.unsubscribe(['down/#']), [0])
  t.same(await gw.client.unsubscribe(['never/#']), [0x11])
  gw.client.disconnect()
  await mqtt.endAsync()
})

t.test('a will is published when the link drops, not after a DISCONNECT', async (t) => {
  const mqtt = await node.mqtt({ clientId: 'will-watcher' })
  await mqtt.subscribeAsync('wills/#', { qos: 1 })
  const polite = await connected('gw-polite', { will: { topic: 'wills/polite', payload: 'x' } })
  polite.client.disconnect()
  const rude = await connected('gw-rude', { will: { topic: 'wills/rude', payload: 'gone', qos: 1 } })
  const will = nextMessages(mqtt, 1, 15_000)
  rude.client.destroy()
  t.same((await will).map((m) => m.topic), ['wills/rude'])
  await mqtt.endAsync()
})

t.test('kicked: the gateway is told administrative_action, its waiting requests fail, the listing drops it', async (t) => {
  const gw = await connected('gw-kicked', { keepalive: 1 })
  t.equal((await node.http('DELETE', '/connections/gw-kicked')).status, 200)
  await until('closed', () => gw.closed.length === 1)
  t.same(gw.closed, [{ reasonCode: 0x98, reason: 'administrative_action' }])
  t.notOk(gw.client.open)
  await t.rejects(gw.client.publish({ topic: 'x', payload: '', qos: 1 }), GatewayLinkClosed)
  await t.rejects(gw.client.publish({ topic: 'x', payload: '' }), GatewayLinkClosed)
  await t.rejects(gw.client.subscribe([{ topic: 'x', qos: 0 }]), GatewayLinkClosed)
  t.equal(await row('/connections/gw-kicked'), undefined)
})

t.test('refused at CONNECT: the CONNACK says why, and so does the close', async (t) => {
  const opened = probe().open()
  const connack = await opened.client.connect({ clientId: 'x'.repeat(100) })
  t.match(connack, { reasonCode: 0x85, reason: 'client_identifier_not_valid' })
  await until('closed', () => opened.closed.length === 1)
  t.same(opened.closed, [{ reasonCode: 0x85, reason: 'client_identifier_not_valid' }])
})

t.test('a taken-over session tells the old link', async (t) => {
  const first = await connected('gw-twice')
  const second = await connected('gw-twice')
  await until('the first closed', () => first.closed.length === 1)
  t.same(first.closed, [{ reasonCode: 0x8e, reason: 'session_taken_over' }])
  t.ok(second.client.open)
  second.client.disconnect()
})

t.test('unloading the gateway plugin closes its links', async (t) => {
  const a = await connected('gw-a')
  const b = await connected('gw-b')
  t.equal((await node.http('PUT', `/nodes/${node.node.name}/plugins/${PLUGIN}/unload`)).status, 200)
  await until('both closed', () => a.closed.length === 1 && b.closed.length === 1)
  await until('not listed', async () => await row('/connections/gw-a') === undefined && await row('/connections/gw-b') === undefined)
  t.equal((await node.http('PUT', `/nodes/${node.node.name}/plugins/${PLUGIN}/load`)).status, 200)
})

t.test('LinkEnd: bytes flow both ways with back-pressure; end half-closes, destroy closes both', async (t) => {
  const [a, b] = LinkEnd.pair()
  b.pause()
  let writes = 0
  while (a.write(Buffer.alloc(1024))) writes++
  t.ok(writes > 0, 'a paused reader fills the buffers until write says wait')
  const drained = new Promise((resolve) => a.once('drain', resolve))
  let read = 0
  b.on('data', (chunk: Buffer) => { read += chunk.length })
  b.resume()
  await drained
  t.ok(read > 0)
  const ended = new Promise((resolve) => b.once('end', resolve))
  a.end()
  await ended
  t.notOk(b.destroyed, 'the other end stays open after a half-close')
  const closed = new Promise((resolve) => a.once('close', resolve))
  b.destroy()
  await closed
  t.ok(a.destroyed)
  const [c, d] = LinkEnd.pair()
  d.destroy()
  await new Promise((resolve) => c.once('close', resolve))
  t.ok(c.destroyed)
})
