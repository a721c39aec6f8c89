// /api/v2 listings and lookups (SPEC §4.5) in the v2 record shapes, with real MQTT clients connected.
import t from 'tap'
import { closeAll, connect } from '../../../test/helpers/mqtt.js'
import { startV2Node } from './v2-api.js'

const TIMESTAMP = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/
const api = await startV2Node()
t.teardown(async () => await api.stop())
const node = api.broker.node.name
const a = await connect(api.mqttUrl, { clientId: 'v2-a', username: 'alice', keepalive: 30, protocolVersion: 5 })
const b = await connect(api.mqttUrl, { clientId: 'v2-b', keepalive: 0, clean: false })
const c = await connect(api.mqttUrl, { clientId: 'v2-c' })
await a.subscribeAsync({ 'x/+/y': { qos: 1 }, 'z/#': { qos: 0 } })
await b.subscribeAsync({ 'x/+/y': { qos: 2 } })
t.teardown(async () => await closeAll(a, b, c))

async function ok (path: string): Promise<unknown> {
  const res = await api.call('GET', path)
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(res.body)}`)
  const body = res.body as { code: number, result: unknown }
  if (body.code !== 0) throw new Error(`${path}: code ${body.code}`)
  return body.result
}

t.test('node info (§2.9): name in the list only', async (t) => {
  const list = await ok('/management/nodes') as Array<Record<string, unknown>>
  t.equal(list.length, 1)
  t.same(Object.keys(list[0]), ['name', 'version', 'sysdescr', 'uptime', 'datetime', 'otp_release', 'node_status'])
  t.match(list[0], { name: node, version: String, sysdescr: String, uptime: /seconds/, datetime: TIMESTAMP, otp_release: String, node_status: 'Running' })
  const one = await ok(`/management/nodes/${node}`) as Record<string, unknown>
  t.same(Object.keys(one), ['version', 'sysdescr', 'uptime', 'datetime', 'otp_release', 'node_status'])
})

t.test('node monitoring (§2.9): memory as <n>M, clients counted', async (t) => {
  const keys = ['name', 'otp_release', 'memory_total', 'memory_used', 'process_available', 'process_used', 'max_fds', 'clients', 'node_status', 'load1', 'load5', 'load15']
  const shape = { name: node, memory_total: /^\d+M$/, memory_used: /^\d+M$/, process_available: Number, process_used: Number, max_fds: Number, clients: 3, node_status: 'Running', load1: String, load5: String, load15: String }
  const list = await ok('/monitoring/nodes') as Array<Record<string, unknown>>
  t.equal(list.length, 1)
  t.same(Object.keys(list[0]), keys)
  t.match(list[0], shape)
  const one = await ok(`/monitoring/nodes/${node}`) as Record<string, unknown>
  t.same(Object.keys(one), keys)
  t.match(one, shape)
})

t.test('clients (§2.2): paged per node, looked up as {objects}', async (t) => {
  const page = await ok(`/nodes/${node}/clients`) as { objects: Array<Record<string, unknown>> }
  t.match(page, { current_page: 1, page_size: 20, total_num: 3, total_page: 1 })
  const ca = page.objects.find((o) => o.client_id === 'v2-a')!
  t.same(Object.keys(ca), ['client_id', 'username', 'ipaddress', 'port', 'clean_sess', 'proto_ver', 'keepalive', 'connected_at'])
  t.match(ca, { client_id: 'v2-a', username: 'alice', ipaddress: '127.0.0.1', port: Number, clean_sess: true, proto_ver: 5, keepalive: 30, connected_at: TIMESTAMP })
  t.match(page.objects.find((o) => o.client_id === 'v2-b'), { clean_sess: false, username: 'undefined', proto_ver: 4 })
  const one = await ok('/clients/v2-b') as { objects: unknown[] }
  t.match(one, { objects: [{ client_id: 'v2-b', clean_sess: false }] })
  t.equal(one.objects.length, 1)
  t.same(await ok(`/nodes/${node}/clients/v2-b`), one)
  t.same(await ok('/clients/nobody'), { objects: [] })
})

t.test('paging: curr_page and page_size slice; total_num and total_page count', async (t) => {
  const p1 = await ok(`/nodes/${node}/clients?curr_page=1&page_size=2`) as { objects: unknown[] }
  t.match(p1, { current_page: 1, page_size: 2, total_num: 3, total_page: 2 })
  t.equal(p1.objects.length, 2)
  const p2 = await ok(`/nodes/${node}/clients?curr_page=2&page_size=2`) as { objects: unknown[] }
  t.match(p2, { current_page: 2, page_size: 2, total_num: 3, total_page: 2 })
  t.equal(p2.objects.length, 1)
  t.same(await ok(`/nodes/${node}/subscriptions?curr_page=3&page_size=2`), { current_page: 3, page_size: 2, total_num: 3, total_page: 2, objects: [] })
})

t.test('sessions (§2.4)', async (t) => {
  const page = await ok(`/nodes/${node}/sessions`) as { total_num: number, objects: Array<Record<string, unknown>> }
  t.equal(page.total_num, 3)
  const sa = page.objects.find((o) => o.client_id === 'v2-a')!
  t.same(Object.keys(sa), ['client_id', 'clean_sess', 'subscriptions', 'max_inflight', 'inflight_len', 'mqueue_len', 'mqueue_dropped', 'awaiting_rel_len', 'deliver_msg', 'enqueue_msg', 'created_at'])
  t.match(sa, { client_id: 'v2-a', clean_sess: true, subscriptions: 2, max_inflight: 32, inflight_len: 0, mqueue_len: 0, mqueue_dropped: 0, awaiting_rel_len: 0, deliver_msg: 0, enqueue_msg: 0, created_at: TIMESTAMP })
  const sb = await ok('/sessions/v2-b')
  t.match(sb, { objects: [{ client_id: 'v2-b', clean_sess: false, subscriptions: 1 }] })
  t.same(await ok(`/nodes/${node}/sessions/v2-b`), sb)
  t.same(await ok('/sessions/nobody'), { objects: [] })
})

t.test('subscriptions (no node) and routes', async (t) => {
  const page = await ok(`/nodes/${node}/subscriptions`) as { total_num: number, objects: unknown[] }
  t.equal(page.total_num, 3)
  t.same(page.objects.filter((s) => (s as { client_id: string }).client_id === 'v2-b'), [{ client_id: 'v2-b', topic: 'x/+/y', qos: 2 }])
  const sa = await ok('/subscriptions/v2-a') as { objects: Array<{ topic: string }> }
  t.same(sa.objects.sort((x, y) => x.topic.localeCompare(y.topic)), [{ client_id: 'v2-a', topic: 'x/+/y', qos: 1 }, { client_id: 'v2-a', topic: 'z/#', qos: 0 }])
  t.same(await ok(`/nodes/${node}/subscriptions/v2-b`), { objects: [{ client_id: 'v2-b', topic: 'x/+/y', qos: 2 }] })

  t.same(await ok('/routes'), { current_page: 1, page_size: 20, total_num: 2, total_page: 1, objects: [{ topic: 'x/+/y', node }, { topic: 'z/#', node }] })
  t.same(await ok('/routes/x/+/y'), { objects: [{ topic: 'x/+/y', node }] })
  t.same(await ok(`/routes/${encodeURIComponent('z/#')}`), { objects: [{ topic: 'z/#', node }] })
  t.same(await ok('/routes/none'), { objects: [] })
})

t.test('listeners (§2.10 v2): keyed by node, and per node', async (t) => {
  const all = await ok('/monitoring/listeners') as Record<string, Array<Record<string, unknown>>>
  t.same(Object.keys(all), [node])
  t.same(all[node][0], { protocol: 'mqtt:tcp', listen: `127.0.0.1:${api.broker.port()}`, acceptors: all[node][0].acceptors, max_clients: all[node][0].max_clients, current_clients: 3, shutdown_count: [] })
  t.type(all[node][0].acceptors, 'number')
  t.type(all[node][0].max_clients, 'number')
  t.same(all[node].map((l) => l.protocol), ['mqtt:tcp', 'mqtt:api'], 'then the management listener')
  t.same((await ok(`/monitoring/listeners/${node}`) as unknown[])[0], all[node][0])
})

t.test('metrics and stats with the v2 keys', async (t) => {
  const all = await ok('/monitoring/metrics/') as Record<string, Record<string, number>>
  t.same(Object.keys(all), [node])
  const metrics = await ok(`/monitoring/metrics/${node}`) as Record<string, number>
  for (const m of [all[node], metrics]) {
    t.type(m['packets/disconnect'], 'number')
    t.ok(m['packets/connect'] >= 3, 'the clients\' CONNECTs are counted')
    t.ok(m['packets/subscribe'] >= 2)
    for (const absent of ['packets/disconnect/received', 'packets/disconnect/sent', 'packets/auth', 'messages/expired', 'messages/forward', 'messages/qos2/expired']) t.notOk(absent in m, absent)
  }
  const stats = await ok('/monitoring/stats') as Array<Record<string, Record<string, number>>>
  t.equal(stats.length, 1)
  t.same(Object.keys(stats[0]), [node])
  const one = await ok(`/monitoring/stats/${node}`) as Record<string, number>
  t.same(Object.keys(one).sort(), ['clients/count', 'clients/max', 'retained/count', 'retained/max', 'routes/count', 'routes/max', 'sessions/count', 'sessions/max', 'subscribers/count', 'subscribers/max', 'subscriptions/count', 'subscriptions/max', 'topics/count', 'topics/max'])
  t.equal(one['clients/count'], 3)
  t.equal(one['subscriptions/count'], 3)
  t.same(Object.keys(stats[0][node]).sort(), Object.keys(one).sort())
})

t.test('plugins list', async (t) => {
  const plugins = await ok(`/nodes/${node}/plugins`) as Array<Record<string, unknown>>
  t.match(plugins.find((p) => p.name === 'broker_management'), { name: 'broker_management', version: String, description: String, active: true })
})
