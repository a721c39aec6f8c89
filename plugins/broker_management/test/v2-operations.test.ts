// /api/v2 operations with effects, observed by real MQTT clients: kick, ACL cache, publish, subscribe on behalf,
// plugins on/off (110/111), configs, plugin configs (and max_row_limit capping page_size after a reload).
import t from 'tap'
import mqtt from 'mqtt'
import { closeAll, connect, nextMessages, noMessageWithin } from '../../../test/helpers/mqtt.js'
import { startV2Node } from './v2-api.js'

const api = await startV2Node({}, {}, ['tcp'], { broker_plugin_template: { 'template.greeting_topic': 'greetings' } })
t.teardown(async () => await api.stop())
const node = api.broker.node.name
const NO_DATA = { status: 200, body: { code: 0, result: [] } }

t.test('DELETE /clients/:clientid: the client is disconnected; then 112', async (t) => {
  const client = await connect(api.mqttUrl, { clientId: 'v2-kick', protocolVersion: 5 })
  t.teardown(async () => await closeAll(client))
  const got = new Promise<number | undefined>((resolve) => client.once('disconnect', (packet) => resolve(packet.reasonCode)))
  const closed = new Promise<void>((resolve) => client.once('close', () => resolve()))
  t.same(await api.call('DELETE', '/clients/v2-kick').then((r) => ({ status: r.status, body: r.body })), NO_DATA)
  t.equal(await got, 0x98)
  await closed
  t.match(await api.call('DELETE', '/clients/v2-kick'), { status: 404, body: { code: 112, result: [], message: String } })
})

t.test('PUT /clients/:clientid/clean_acl_cache {topic}', async (t) => {
  const client = await connect(api.mqttUrl, { clientId: 'v2-acl' })
  t.teardown(async () => await closeAll(client))
  await client.publishAsync('a/b/c', 'x', { qos: 1 })
  t.match(await api.call('PUT', '/clients/v2-acl/clean_acl_cache', { body: { topic: 'a/b/c' } }), NO_DATA)
  t.match(await api.call('PUT', '/clients/nobody/clean_acl_cache', { body: { topic: 'a' } }), { status: 404, body: { code: 112, result: [] } })
  t.match(await api.call('PUT', '/clients/v2-acl/clean_acl_cache', { body: {} }), { status: 400, body: { code: 107 } })
  t.match(await api.call('PUT', '/clients/v2-acl/clean_acl_cache', { body: { topic: 5 } }), { status: 400, body: { code: 108 } })
})

t.test('POST /mqtt/publish reaches a real subscriber', async (t) => {
  const sub = await connect(api.mqttUrl, { clientId: 'v2-watcher' })
  t.teardown(async () => await closeAll(sub))
  await sub.subscribeAsync('v2/#', { qos: 1 })
  const got = nextMessages(sub, 1)
  t.match(await api.call('POST', '/mqtt/publish', { body: { topic: 'v2/one', payload: 'hello', qos: 1, client_id: 'tester' } }), NO_DATA)
  t.match(await got, [{ topic: 'v2/one', payload: 'hello', qos: 1, retain: false }])
  const plain = nextMessages(sub, 1)
  t.match(await api.call('POST', '/mqtt/publish', { body: { topic: 'v2/two' } }), NO_DATA)
  t.match(await plain, [{ topic: 'v2/two', payload: '', qos: 0, retain: false }])
  t.match(await api.call('POST', '/mqtt/publish', { body: { payload: 'x' } }), { status: 400, body: { code: 107, result: [] } })
  t.match(await api.call('POST', '/mqtt/publish', { body: { topic: 'v2/+' } }), { status: 400, body: { code: 108, result: [] } })
  t.ok(await noMessageWithin(sub, 200), 'refused publishes deliver nothing')
})

t.test('POST /mqtt/subscribe and /mqtt/unsubscribe on behalf of a connected client', async (t) => {
  const client = await connect(api.mqttUrl, { clientId: 'v2-behalf' })
  const publisher = await connect(api.mqttUrl, { clientId: 'v2-commander' })
  t.teardown(async () => await closeAll(client, publisher))
  t.match(await api.call('POST', '/mqtt/subscribe', { body: { client_id: 'v2-behalf', topic: 'cmd/+', qos: 1 } }), NO_DATA)
  t.same((await api.call('GET', '/subscriptions/v2-behalf')).body, { code: 0, result: { objects: [{ client_id: 'v2-behalf', topic: 'cmd/+', qos: 1 }] } })
  const got = nextMessages(client, 1)
  await publisher.publishAsync('cmd/go', 'now', { qos: 1 })
  t.match(await got, [{ topic: 'cmd/go', payload: 'now', qos: 1 }])

  t.match(await api.call('POST', '/mqtt/unsubscribe', { body: { client_id: 'v2-behalf', topic: 'cmd/+' } }), NO_DATA)
  await publisher.publishAsync('cmd/go', 'again', { qos: 1 })
  t.ok(await noMessageWithin(client, 300), 'no message after the unsubscribe')

  t.match(await api.call('POST', '/mqtt/subscribe', { body: { client_id: 'nobody', topic: 'a' } }), { status: 404, body: { code: 112, result: [] } })
  t.match(await api.call('POST', '/mqtt/unsubscribe', { body: { client_id: 'nobody', topic: 'a' } }), { status: 404, body: { code: 112, result: [] } })
  t.match(await api.call('POST', '/mqtt/subscribe', { body: { topic: 'a' } }), { status: 400, body: { code: 107 } })
})

t.test('PUT /nodes/:node/plugins/:name {active}: 110 when loaded, 111 when unloaded', async (t) => {
  const tpl = 'broker_plugin_template'
  const path = `/nodes/${node}/plugins/${tpl}`
  t.equal(api.broker.node.plugins.isActive(tpl), true)
  t.match(await api.call('PUT', path, { body: { active: true } }), { status: 503, body: { code: 110, result: [], message: 'already_started' } })
  t.match(await api.call('PUT', path, { body: { active: false } }), NO_DATA)
  t.equal(api.broker.node.plugins.isActive(tpl), false)
  const listed = (await api.call('GET', `/nodes/${node}/plugins`)).body as { result: Array<{ name: string, active: boolean }> }
  t.equal(listed.result.find((p) => p.name === tpl)?.active, false)
  t.match(await api.call('PUT', path, { body: { active: false } }), { status: 503, body: { code: 111, result: [], message: 'not_started' } })
  t.match(await api.call('PUT', path, { body: { active: true } }), NO_DATA)
  t.equal(api.broker.node.plugins.isActive(tpl), true)
  t.match(await api.call('PUT', path, { body: {} }), { status: 400, body: { code: 107 } })
  t.match(await api.call('PUT', path, { body: { active: 'maybe' } }), { status: 400, body: { code: 108 } })
  t.match(await api.call('PUT', `/nodes/${node}/plugins/broker_nothing`, { body: { active: true } }), { status: 404, body: { code: 102, result: [] } })
})

t.test('configs: keyed by node, sys_interval in seconds; a PUT takes effect on the next client', async (t) => {
  const all = (await api.call('GET', '/configs')).body as { code: number, result: Record<string, Array<Record<string, unknown>>> }
  t.equal(all.code, 0)
  t.same(Object.keys(all.result), [node])
  t.same(all.result[node].find((c) => c.key === 'mqtt.allow_anonymous'), { key: 'mqtt.allow_anonymous', value: 'true', datatpye: 'enum', app: 'broker', kind: 'live' })
  t.same(all.result[node].find((c) => c.key === 'mqtt.broker.sys_interval'), { key: 'mqtt.broker.sys_interval', value: 60, datatpye: 'integer, duration', app: 'broker', kind: 'live' })

  t.match(await api.call('PUT', '/configs/broker', { body: { key: 'mqtt.allow_anonymous', value: 'false' } }), NO_DATA)
  const refused = mqtt.connect(api.mqttUrl, { reconnectPeriod: 0, clientId: 'v2-anon', protocolVersion: 5 })
  const err = await new Promise<{ code?: number }>((resolve) => refused.once('error', (e) => resolve(e as { code?: number })))
  refused.end(true)
  t.equal(err.code, 0x87, 'refused as not authorized')
  t.match(await api.call('PUT', `/nodes/${node}/configs/broker`, { body: { key: 'mqtt.allow_anonymous', value: 'true' } }), NO_DATA)
  const items = (await api.call('GET', `/nodes/${node}/configs`)).body as { result: Array<Record<string, unknown>> }
  t.equal(items.result.find((c) => c.key === 'mqtt.allow_anonymous')?.value, 'true')
  await closeAll(await connect(api.mqttUrl, { clientId: 'v2-anon-2' }))

  t.match(await api.call('PUT', '/configs/broker', { body: { key: 'broker.sys_interval', value: '30s' } }), NO_DATA)
  const after = (await api.call('GET', `/nodes/${node}/configs`)).body as { result: Array<Record<string, unknown>> }
  t.equal(after.result.find((c) => c.key === 'mqtt.broker.sys_interval')?.value, 30)
  t.match(await api.call('PUT', '/configs/broker', { body: { key: 'mqtt.allow_anonymous', value: 'maybe' } }), { status: 400, body: { code: 108, result: [] } })
  t.match(await api.call('PUT', '/configs/broker', { body: { key: 'mqtt.allow_anonymous' } }), { status: 400, body: { code: 107, result: [] } })
})

t.test('plugin_configs: GET with desc and required; PUT validated, written, reloads', async (t) => {
  const path = `/nodes/${node}/plugin_configs/broker_plugin_template`
  t.same((await api.call('GET', path)).body, { code: 0, result: [{ key: 'template.greeting_topic', value: 'greetings', desc: '', required: true }] })
  const http = (await api.call('GET', `/nodes/${node}/plugin_configs/broker_auth_http`)).body as { result: Array<Record<string, unknown>> }
  t.match(http.result.find((i) => i.key === 'auth.http.auth_req'), { value: String, desc: /authentication/, required: false })
  t.match(await api.call('PUT', path, { body: { 'template.greeting_topic': 'bad/+' } }), { status: 400, body: { code: 108, result: [] } })

  t.match(await api.call('PUT', path, { body: { 'template.greeting_topic': 'hello/v2' } }), NO_DATA)
  t.same((await api.call('GET', path)).body, { code: 0, result: [{ key: 'template.greeting_topic', value: 'hello/v2', desc: '', required: true }] })
  const watcher = await connect(api.mqttUrl, { clientId: 'v2-greet-watch' })
  t.teardown(async () => await closeAll(watcher))
  await watcher.subscribeAsync('hello/v2/+')
  const got = nextMessages(watcher, 1)
  await closeAll(await connect(api.mqttUrl, { clientId: 'v2-newcomer' }))
  t.match(await got, [{ topic: 'hello/v2/v2-newcomer' }], 'the reloaded plugin uses the new setting')
  t.match(await api.call('GET', `/nodes/${node}/plugin_configs/broker_nothing`), { status: 404, body: { code: 102, result: [] } })
})

t.test('PUT plugin_configs of broker_management: page_size is then capped by management.max_row_limit', async (t) => {
  t.match(await api.call('PUT', `/nodes/${node}/plugin_configs/broker_management`, { body: { 'management.max_row_limit': '2' } }), NO_DATA)
  const deadline = Date.now() + 10_000
  let size: number | undefined
  while (Date.now() < deadline) {
    try {
      size = ((await api.call('GET', '/routes?page_size=50')).body as { result?: { page_size: number } }).result?.page_size
      if (size === 2) break
    } catch {
      // the server is restarting
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  t.equal(size, 2)
  t.match((await api.call('GET', `/nodes/${node}/clients`)).body, { code: 0, result: { page_size: 2 } }, 'the default 20 is capped too')
})
