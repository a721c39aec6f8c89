// Every event's body, as a real endpoint receives it from a real node with a
// rule for each of the 13 events: EMQ X's fields, one client's events in
// order, the configured headers; topic filters of the rules; the metrics.
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { startPluginNode, type MqttClient } from '../../../lib/plugin-kit/testing.js'
import { waitFor } from '../../../test/helpers/cluster.js'
import { RawClient } from '../../../test/helpers/raw-client.js'
import { EVENTS } from '../rules.js'
import { startEndpoint, type Hit } from './endpoint.js'

const ALL_RULES = Object.fromEntries(Object.entries(EVENTS).map(([event, action]) => [`web.hook.rule.${event}.1`, JSON.stringify({ action })]))

const e = await startEndpoint()
t.teardown(e.close)
const dir = await mkdtemp(join(tmpdir(), 'web-hook-events-'))
t.teardown(async () => await rm(dir, { recursive: true, force: true }))
const aclFile = join(dir, 'acl.conf')
await writeFile(aclFile, '{deny, all, publish, ["secret/#"]}.\n{allow, all}.\n')
const node = await startPluginNode({
  plugin: 'broker_web_hook',
  settings: { 'web.hook.api.url': e.url('/mqtt/webhook?from=broker'), 'web.hook.headers.x-token': 's3cret', ...ALL_RULES },
  // one message in flight and one queued per client: a third is dropped
  node: { 'zone.external.max_inflight': 1, 'zone.external.max_mqueue_len': 1, 'mqtt.max_clientid_len': 23, 'mqtt.acl_file': aclFile },
  withApi: true
})
t.teardown(node.stop)
const NODE = node.node.name

const of = (clientId: string) => (hit: Hit): boolean => hit.body.clientid === clientId || hit.body.from_client_id === clientId
const action = (name: string, clientId: string) => (hit: Hit): boolean => hit.body.action === name && of(clientId)(hit)
const body = async (name: string, clientId: string): Promise<Record<string, unknown>> => (await e.waitFor(action(name, clientId), 20_000, `${name} of ${clientId}`)).body
const end = async (client: MqttClient): Promise<void> => { await client.endAsync() }

t.test('a client session from connect to disconnect, and its messages', async (t) => {
  const before = Date.now()
  const sub = await node.mqtt({ clientId: 'sub-1', username: 'alice', clean: false, keepalive: 30, protocolVersion: 4 })
  t.same(await body('client_connect', 'sub-1'), { action: 'client_connect', node: NODE, clientid: 'sub-1', username: 'alice', ipaddress: '127.0.0.1', keepalive: 30, proto_ver: 4 })
  t.same(await body('client_connack', 'sub-1'), { action: 'client_connack', node: NODE, clientid: 'sub-1', username: 'alice', ipaddress: '127.0.0.1', keepalive: 30, proto_ver: 4, conn_ack: 'success' })
  const connected = await body('client_connected', 'sub-1')
  t.match(connected, { action: 'client_connected', node: NODE, clientid: 'sub-1', username: 'alice', ipaddress: '127.0.0.1', keepalive: 30, proto_ver: 4, connected_at: Number })
  t.ok((connected.connected_at as number) >= before && (connected.connected_at as number) <= Date.now(), 'connected_at: ms since the epoch')

  await sub.subscribeAsync('sensors/+/temp', { qos: 1 })
  t.same(await body('client_subscribe', 'sub-1'), { action: 'client_subscribe', node: NODE, clientid: 'sub-1', username: 'alice', topic: 'sensors/+/temp', opts: { qos: 1 } })
  t.same(await body('session_subscribed', 'sub-1'), { action: 'session_subscribed', node: NODE, clientid: 'sub-1', username: 'alice', topic: 'sensors/+/temp', opts: { qos: 1 } })

  const pub = await node.mqtt({ clientId: 'pub-1', username: 'bob' })
  const received = new Promise((resolve) => sub.once('message', resolve))
  const publishedFrom = Date.now()
  await pub.publishAsync('sensors/1/temp', '21.5 °C', { qos: 1 })
  const publishedTo = Date.now()
  await received
  const message = { from_client_id: 'pub-1', from_username: 'bob', topic: 'sensors/1/temp', qos: 1, retain: false, payload: '21.5 °C', ts: Number }
  const published = await body('message_publish', 'pub-1')
  t.match(published, { action: 'message_publish', node: NODE, ...message })
  t.same(Object.keys(published).sort(), ['action', 'from_client_id', 'from_username', 'node', 'payload', 'qos', 'retain', 'topic', 'ts'])
  t.ok((published.ts as number) >= publishedFrom && (published.ts as number) <= publishedTo, `ts ${String(published.ts)} is when it was published (${publishedFrom}–${publishedTo})`)
  const delivered = await e.waitFor((h) => h.body.action === 'message_delivered' && h.body.clientid === 'sub-1', 20_000, 'message_delivered')
  t.match(delivered.body, { action: 'message_delivered', node: NODE, clientid: 'sub-1', username: 'alice', ...message })
  const acked = await e.waitFor((h) => h.body.action === 'message_acked' && h.body.clientid === 'sub-1', 20_000, 'message_acked')
  t.match(acked.body, { action: 'message_acked', node: NODE, clientid: 'sub-1', username: 'alice', ...message })

  await sub.unsubscribeAsync('sensors/+/temp')
  t.same(await body('client_unsubscribe', 'sub-1'), { action: 'client_unsubscribe', node: NODE, clientid: 'sub-1', username: 'alice', topic: 'sensors/+/temp', opts: {} })
  t.same(await body('session_unsubscribed', 'sub-1'), { action: 'session_unsubscribed', node: NODE, clientid: 'sub-1', username: 'alice', topic: 'sensors/+/temp' })

  // the same publisher and topic again, later, no longer delivered to sub-1 (its texts are then kept and copied): each body its own payload and time
  await new Promise((resolve) => setTimeout(resolve, 50))
  const againFrom = Date.now()
  await pub.publishAsync('sensors/1/temp', '22.0 °C', { qos: 1 })
  await pub.publishAsync('sensors/1/temp', '22.5 °C', { qos: 0 })
  // a QoS 0 publish resolves once written, before the node reads it: the last moment is when its event has come
  const again = await e.waitFor((h) => h.body.action === 'message_publish' && h.body.payload === '22.5 °C', 20_000, 'the third message_publish')
  const againTo = Date.now()
  const second = e.hits.find((h) => h.body.action === 'message_publish' && h.body.payload === '22.0 °C')
  t.match(second?.body, { ...message, payload: '22.0 °C', qos: 1 })
  t.match(again.body, { ...message, payload: '22.5 °C', qos: 0 })
  for (const body of [second?.body, again.body]) t.ok((body?.ts as number) >= againFrom && (body?.ts as number) <= againTo, `a later message's ts ${String(body?.ts)} is its own time (${againFrom}–${againTo})`)

  await end(pub)
  const disconnected = await body('client_disconnected', 'pub-1')
  t.match(disconnected, { action: 'client_disconnected', node: NODE, clientid: 'pub-1', username: 'bob', reason: 'normal', disconnected_at: Number })
  t.same(await body('session_terminated', 'pub-1'), { action: 'session_terminated', node: NODE, clientid: 'pub-1', username: 'bob', reason: 'normal' })

  await end(sub)
  await body('client_disconnected', 'sub-1')
  t.same(e.hits.filter(of('sub-1')).map((h) => h.body.action), [
    'client_connect', 'client_connack', 'client_connected', 'client_subscribe', 'session_subscribed',
    'message_delivered', 'message_acked', 'client_unsubscribe', 'session_unsubscribed', 'client_disconnected'
  ], "one client's events in the order they happened (a persistent session is not terminated)")

  const first = e.hits[0]
  t.equal(first.method, 'POST')
  t.equal(first.path, '/mqtt/webhook?from=broker')
  t.equal(first.headers['content-type'], 'application/json')
  t.equal(first.headers['x-token'], 's3cret')
})

t.test('a refused CONNECT: client_connack with the reason, no client_connected', async (t) => {
  const id = 'x'.repeat(24)
  await t.rejects(node.mqtt({ clientId: id }))
  t.match(await body('client_connack', id), { action: 'client_connack', clientid: id, username: null, conn_ack: 'client_id_not_valid' })
  t.equal(e.hits.filter((h) => h.body.clientid === id && h.body.action === 'client_connected').length, 0)
})

t.test('message_dropped: the queue of a subscriber that does not acknowledge is full', async (t) => {
  // a raw client that never acknowledges: one message stays in flight, one waits, the third is dropped
  const slow = await RawClient.open(node.port(), 4)
  t.teardown(() => slow.end())
  await slow.connect({ clientId: 'slow-1', username: 'carol' })
  slow.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'drop/me', qos: 1 }] })
  await slow.next('suback')
  const pub = await node.mqtt({ clientId: 'pub-2' })
  t.teardown(async () => await pub.endAsync())
  for (let n = 1; n <= 3; n++) await pub.publishAsync('drop/me', `m${n}`, { qos: 1 })
  t.match(await body('message_dropped', 'slow-1'), {
    action: 'message_dropped', node: NODE, clientid: 'slow-1', username: 'carol', from_client_id: 'pub-2', from_username: null, topic: 'drop/me', qos: 1, retain: false, payload: 'm3', ts: Number, reason: 'queue_full'
  })
})

t.test("messages on $SYS are not posted; the node's own messages have no publisher", async (t) => {
  const sub = await node.mqtt({ clientId: 'sys-sub' })
  t.teardown(async () => await sub.endAsync())
  await sub.subscribeAsync('$SYS/brokers/+/clients/#', { qos: 0 })
  const answer = await node.http('POST', '/mqtt/publish', { topic: 'from/api', payload: 'hi', qos: 0, retain: true })
  t.equal(answer.status, 200)
  t.match(await e.waitFor((h) => h.body.action === 'message_publish' && h.body.topic === 'from/api'), { body: { from_client_id: null, from_username: null, payload: 'hi', retain: true } })
  await sub.unsubscribeAsync('$SYS/brokers/+/clients/#')
  await body('session_unsubscribed', 'sys-sub')
  const sys = e.hits.filter((h) => String(h.body.topic).startsWith('$SYS/'))
  t.same(sys.map((h) => h.body.action), ['client_subscribe', 'session_subscribed', 'client_unsubscribe', 'session_unsubscribed'], 'the subscription is posted, no $SYS message (the connect notices were published)')
})

t.test('as in EMQ X, a message is posted once its publisher may publish it: not one the ACL refuses', async (t) => {
  const pub = await node.mqtt({ clientId: 'acl-pub', protocolVersion: 5 })
  t.teardown(async () => await pub.endAsync())
  await t.rejects(pub.publishAsync('secret/plans', 'no', { qos: 1 }), { code: 0x87 }, 'PUBACK 0x87: not authorized')
  await pub.publishAsync('open/plans', 'yes', { qos: 1 })
  t.match((await body('message_publish', 'acl-pub')), { topic: 'open/plans', payload: 'yes' })
  t.same(e.hits.filter(of('acl-pub')).filter((h) => h.body.action === 'message_publish').map((h) => h.body.topic), ['open/plans'], 'the refused one was not posted, the next one was')
})

t.test('the metrics count each event and what was sent', async (t) => {
  await waitFor(() => e.answered === e.hits.length && (node.node.service.metrics() as Record<string, number>)['webhook/sent'] === e.hits.length, 20_000, 'every request answered and counted')
  const metrics = node.node.service.metrics() as Record<string, number>
  t.equal(metrics['webhook/failed'], 0)
  t.equal(metrics['webhook/dropped'], 0)
  t.equal(metrics['webhook.message_publish'], e.actions('message_publish').length)
  t.equal(metrics['webhook.client_connect'], e.actions('client_connect').length)
  const { body: api } = await node.http('GET', `/nodes/${NODE}/metrics`)
  t.match(api, { 'webhook/sent': Number, 'webhook/dropped': 0, 'webhook.session_terminated': Number }, 'listed by the metrics API')
})
