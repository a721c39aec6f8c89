// Connections, sessions, subscriptions and routes over a real socket, with real MQTT clients.
import t from 'tap'
import { closeAll, connect } from '../../../test/helpers/mqtt.js'
import { startApiNode } from './api.js'

const TIMESTAMP = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/

const api = await startApiNode()
t.teardown(async () => await api.stop())
const node = api.broker.node.name
const a = await connect(api.mqttUrl, { clientId: 'c-a', username: 'alice', keepalive: 30, protocolVersion: 5, will: { topic: 'wills/a', payload: Buffer.from('x'), qos: 0, retain: false } })
const b = await connect(api.mqttUrl, { clientId: 'c-b', keepalive: 0, protocolVersion: 4, clean: false })
const c = await connect(api.mqttUrl, { clientId: 'c-c', protocolVersion: 3, protocolId: 'MQIsdp' })
await a.subscribeAsync({ 'x/+/y': { qos: 1 }, 'z/#': { qos: 0 } })
await b.subscribeAsync({ 'x/+/y': { qos: 2 } })
t.teardown(async () => await closeAll(a, b, c))

t.test('connections: the paged list, per node, and a lookup, in SPEC §2.1 shape', async (t) => {
  const all = await api.call('GET', '/connections/')
  t.equal(all.status, 200)
  const page = all.body as { items: Array<Record<string, unknown>>, meta: Record<string, number> }
  t.same(page.meta, { count: 3, limit: 10000, page: 1 })
  const ca = page.items.find((i) => i.client_id === 'c-a')!
  t.match(ca, {
    clean_start: true, client_id: 'c-a', connected_at: TIMESTAMP, ipaddress: '127.0.0.1', is_bridge: false, is_super: false,
    keepalive: 30, mountpoint: 'undefined', node, peercert: 'nossl', port: Number, proto_name: 'MQTT', proto_ver: 5,
    username: 'alice', will_topic: 'wills/a', zone: 'external'
  })
  t.same(Object.keys(ca).sort(), ['clean_start', 'client_id', 'connected_at', 'ipaddress', 'is_bridge', 'is_super', 'keepalive', 'mountpoint', 'node', 'peercert', 'port', 'proto_name', 'proto_ver', 'username', 'will_topic', 'zone'])
  const cb = page.items.find((i) => i.client_id === 'c-b')!
  t.match(cb, { clean_start: false, username: 'undefined', will_topic: 'undefined', keepalive: 0, proto_ver: 4 })
  t.match(page.items.find((i) => i.client_id === 'c-c'), { proto_name: 'MQIsdp', proto_ver: 3 })

  const perNode = await api.call('GET', `/nodes/${node}/connections`)
  t.equal((perNode.body as { meta: { count: number } }).meta.count, 3)
  const one = await api.call('GET', '/connections/c-b')
  t.equal((one.body as unknown[]).length, 1)
  t.match((one.body as unknown[])[0], { client_id: 'c-b', node })
  t.same((await api.call('GET', `/nodes/${node}/connections/c-b`)).body, one.body)
  t.same((await api.call('GET', '/connections/nobody')).body, [])
})

t.test('paging: _page and _limit slice the list and meta counts them all', async (t) => {
  const p1 = (await api.call('GET', '/connections/?_page=1&_limit=2')).body as { items: unknown[], meta: unknown }
  t.same(p1.meta, { count: 3, limit: 2, page: 1 })
  t.equal(p1.items.length, 2)
  const p2 = (await api.call('GET', '/connections?_page=2&_limit=2')).body as { items: unknown[], meta: unknown }
  t.same(p2.meta, { count: 3, limit: 2, page: 2 })
  t.equal(p2.items.length, 1)
  const p3 = (await api.call('GET', '/subscriptions/?_page=3&_limit=2')).body as { items: unknown[], meta: unknown }
  t.same(p3.meta, { count: 3, limit: 2, page: 3 })
  t.same(p3.items, [])
})

t.test('sessions: SPEC §2.3 fields and types', async (t) => {
  const page = (await api.call('GET', '/sessions/')).body as { items: Array<Record<string, unknown>>, meta: { count: number } }
  t.equal(page.meta.count, 3)
  const sa = page.items.find((i) => i.client_id === 'c-a')!
  t.same(Object.keys(sa).sort(), ['awaiting_rel_len', 'binding', 'clean_start', 'client_id', 'created_at', 'deliver_msg', 'enqueue_msg', 'expiry_interval', 'heap_size', 'inflight_len', 'mailbox_len', 'max_awaiting_rel', 'max_inflight', 'max_mqueue', 'max_subscriptions', 'mqueue_dropped', 'mqueue_len', 'node', 'reductions', 'subscriptions_count', 'username'])
  t.match(sa, { binding: 'local', clean_start: true, client_id: 'c-a', created_at: TIMESTAMP, node, username: 'alice', subscriptions_count: 2, max_inflight: 32, max_awaiting_rel: 100, max_mqueue: 1000, max_subscriptions: 0, expiry_interval: 0 })
  for (const key of ['awaiting_rel_len', 'deliver_msg', 'enqueue_msg', 'heap_size', 'inflight_len', 'mailbox_len', 'mqueue_dropped', 'mqueue_len', 'reductions']) t.type(sa[key], 'number', key)
  const sb = (await api.call('GET', '/sessions/c-b')).body as Array<Record<string, unknown>>
  t.match(sb, [{ client_id: 'c-b', clean_start: false, expiry_interval: 7200, subscriptions_count: 1 }])
  t.same((await api.call('GET', `/nodes/${node}/sessions/c-b`)).body, sb)
  t.equal(((await api.call('GET', `/nodes/${node}/sessions/`)).body as { meta: { count: number } }).meta.count, 3)
})

t.test('subscriptions and routes', async (t) => {
  const subs = (await api.call('GET', '/subscriptions/')).body as { items: unknown[], meta: { count: number } }
  t.equal(subs.meta.count, 3)
  t.same(((await api.call('GET', '/subscriptions/c-a')).body as Array<{ topic: string }>).sort((x, y) => x.topic.localeCompare(y.topic)),
    [{ node, client_id: 'c-a', topic: 'x/+/y', qos: 1 }, { node, client_id: 'c-a', topic: 'z/#', qos: 0 }])
  t.same((await api.call('GET', `/nodes/${node}/subscriptions/c-b`)).body, [{ node, client_id: 'c-b', topic: 'x/+/y', qos: 2 }])
  t.equal(((await api.call('GET', `/nodes/${node}/subscriptions/`)).body as { meta: { count: number } }).meta.count, 3)

  const routes = (await api.call('GET', '/routes/')).body as { items: unknown[], meta: { count: number } }
  t.same(routes.items, [{ topic: 'x/+/y', node }, { topic: 'z/#', node }])
  t.same((await api.call('GET', '/routes/x/+/y')).body, [{ topic: 'x/+/y', node }])
  t.same((await api.call('GET', `/routes/${encodeURIComponent('z/#')}`)).body, [{ topic: 'z/#', node }])
  t.same((await api.call('GET', '/routes/none')).body, [])
})
