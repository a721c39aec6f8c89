// Brokers, nodes, listeners and plugins rows.
import t from 'tap'
import { closeAll, connect } from '../../../test/helpers/mqtt.js'
import { startApiNode } from './api.js'

const TIMESTAMP = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/
const api = await startApiNode()
t.teardown(async () => await api.stop())
const node = api.broker.node.name
const client = await connect(api.mqttUrl, { clientId: 'n-1' })
t.teardown(async () => await closeAll(client))

t.test('brokers: list with node, lookup without', async (t) => {
  const list = (await api.call('GET', '/brokers/')).body as Array<Record<string, unknown>>
  t.equal(list.length, 1)
  t.match(list[0], { node, node_status: 'Running', datetime: TIMESTAMP, otp_release: String, sysdescr: String, uptime: /seconds/, version: String })
  const one = (await api.call('GET', `/brokers/${node}`)).body as Record<string, unknown>
  t.notOk('node' in one)
  t.match(one, { node_status: 'Running', datetime: TIMESTAMP })
})

t.test('nodes: list form writes memory as <n>M, lookup in bytes', async (t) => {
  const list = (await api.call('GET', '/nodes/')).body as Array<Record<string, unknown>>
  t.match(list, [{ node, name: node, connections: 1, memory_total: /^\d+M$/, memory_used: /^\d+M$/, load1: String, load5: String, load15: String, max_fds: Number, process_available: Number, process_used: Number, node_status: 'Running', otp_release: String, uptime: String, version: String }])
  const one = (await api.call('GET', `/nodes/${node}`)).body as Record<string, unknown>
  t.notOk('node' in one)
  t.match(one, { name: node, connections: 1, memory_total: Number, memory_used: Number })
})

t.test('listeners: §2.10 v3 fields, cluster and node forms', async (t) => {
  const all = (await api.call('GET', '/listeners/')).body as Array<{ node: string, listeners: Array<Record<string, unknown>> }>
  t.equal(all.length, 1)
  t.equal(all[0].node, node)
  t.match(all[0].listeners, [{ protocol: 'mqtt:tcp', listen_on: `127.0.0.1:${api.broker.port()}`, acceptors: Number, max_conns: Number, current_conns: 1, shutdown_count: [] }])
  t.same((await api.call('GET', `/nodes/${node}/listeners/`)).body, all[0].listeners)
})

t.test('plugins: list, load, already_started, unload, not_started, unknown', async (t) => {
  const all = (await api.call('GET', '/plugins/')).body as Array<{ node: string, plugins: Array<Record<string, unknown>> }>
  t.equal(all[0].node, node)
  t.match(all[0].plugins.find((p) => p.name === 'broker_management'), { name: 'broker_management', version: String, description: String, active: true })
  const tpl = 'broker_plugin_template'
  t.match((await api.call('GET', `/nodes/${node}/plugins/`)).body, [{ name: String, active: Boolean }])
  t.equal((await api.call('PUT', `/nodes/${node}/plugins/${tpl}/load`)).body, 'ok')
  t.equal(api.broker.node.plugins.isActive(tpl), true)
  t.same(await api.call('PUT', `/nodes/${node}/plugins/${tpl}/load`).then((r) => [r.status, r.body]), [503, { message: 'already_started' }])
  t.equal((await api.call('PUT', `/nodes/${node}/plugins/${tpl}/unload`)).body, 'ok')
  t.equal(api.broker.node.plugins.isActive(tpl), false)
  t.same(await api.call('PUT', `/nodes/${node}/plugins/${tpl}/unload`).then((r) => [r.status, r.body]), [503, { message: 'not_started' }])
  t.equal((await api.call('PUT', `/nodes/${node}/plugins/broker_nothing/load`)).status, 404)
})
