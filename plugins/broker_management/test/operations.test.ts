// Operations with effects, observed by real MQTT clients: kick, ACL cache, live config, banned.
import t from 'tap'
import mqtt from 'mqtt'
import { closeAll, connect } from '../../../test/helpers/mqtt.js'
import { startApiNode } from './api.js'

const api = await startApiNode()
t.teardown(async () => await api.stop())

t.test('DELETE /connections/:clientid kicks: an MQTT 5 client gets DISCONNECT 0x98', async (t) => {
  const client = await connect(api.mqttUrl, { clientId: 'kick-me', protocolVersion: 5 })
  t.teardown(async () => await closeAll(client))
  const got = new Promise<number | undefined>((resolve) => client.once('disconnect', (packet) => resolve(packet.reasonCode)))
  const res = await api.call('DELETE', '/connections/kick-me')
  t.equal(res.status, 200)
  t.equal(res.body, 'ok')
  t.equal(await got, 0x98)
  t.match(await api.call('DELETE', '/connections/kick-me'), { status: 404, body: { code: 112 } })
  const listeners = (await api.call('GET', '/listeners/')).body as Array<{ listeners: Array<{ shutdown_count: unknown }> }>
  t.match(listeners[0].listeners[0].shutdown_count, { kicked: 1, closed: Number })
})

t.test('DELETE /connections/:clientid/acl/:topic cleans the cache of a connected client', async (t) => {
  const client = await connect(api.mqttUrl, { clientId: 'acl-c' })
  t.teardown(async () => await closeAll(client))
  await client.publishAsync('a/b/c', 'x', { qos: 1 })
  const res = await api.call('DELETE', '/connections/acl-c/acl/a/b/c')
  t.equal(res.status, 200)
  t.equal(res.body, 'ok')
  t.match(await api.call('DELETE', '/connections/nobody/acl/a'), { status: 404, body: { code: 112 } })
})

t.test('configs: listed in §2.14 shape; a PUT takes effect on the next client', async (t) => {
  const all = (await api.call('GET', '/configs/')).body as Array<{ node: string, config: Array<Record<string, string>> }>
  t.equal(all.length, 1)
  t.equal(all[0].node, api.broker.node.name)
  const anon = all[0].config.find((c) => c.key === 'mqtt.allow_anonymous')
  t.same(anon, { key: 'mqtt.allow_anonymous', value: 'true', datatpye: 'enum', app: 'broker', kind: 'live' })
  for (const item of all[0].config) t.same(Object.keys(item).sort(), ['app', 'datatpye', 'key', 'kind', 'value'])

  t.equal((await api.call('PUT', '/configs/broker', { body: { key: 'mqtt.allow_anonymous', value: 'false' } })).body, 'ok')
  const refused = mqtt.connect(api.mqttUrl, { reconnectPeriod: 0, clientId: 'anon-1', protocolVersion: 5 })
  const err = await new Promise<{ code?: number }>((resolve) => refused.once('error', (e) => resolve(e as { code?: number })))
  refused.end(true)
  t.equal(err.code, 0x87, 'refused as not authorized')
  const node = api.broker.node.name
  t.equal((await api.call('PUT', `/nodes/${node}/configs/broker`, { body: { key: 'mqtt.allow_anonymous', value: 'true' } })).body, 'ok')
  const items = (await api.call('GET', `/nodes/${node}/configs/`)).body as Array<Record<string, string>>
  t.equal(items.find((c) => c.key === 'mqtt.allow_anonymous')?.value, 'true')
  const accepted = await connect(api.mqttUrl, { clientId: 'anon-2' })
  await closeAll(accepted)
  t.match(await api.call('PUT', '/nodes/other@host/configs/broker', { body: { key: 'mqtt.allow_anonymous', value: 'true' } }), { status: 404 })
})

t.test('banned: POST refuses a real client at once; GET pages; DELETE lifts it', async (t) => {
  const until = Math.floor(Date.now() / 1000) + 600
  const posted = await api.call('POST', '/banned/', { body: { who: 'bad-client', as: 'client_id', reason: 'spam', desc: 'test', until } })
  t.equal(posted.status, 200)
  t.same(posted.body, { who: 'bad-client', as: 'client_id', reason: 'spam', desc: 'test', by: 'undefined', until })
  const refused = mqtt.connect(api.mqttUrl, { reconnectPeriod: 0, clientId: 'bad-client', protocolVersion: 5 })
  const err = await new Promise<{ code?: number }>((resolve) => refused.once('error', (e) => resolve(e as { code?: number })))
  refused.end(true)
  t.equal(err.code, 0x8a)

  await api.call('POST', '/banned/', { body: { who: 'someone', as: 'username' } })
  const page = (await api.call('GET', '/banned/?_limit=1')).body as { items: Array<Record<string, unknown>>, meta: unknown }
  t.same(page.meta, { count: 2, limit: 1, page: 1 })
  t.same(Object.keys(page.items[0]).sort(), ['as', 'by', 'desc', 'reason', 'until', 'who'])

  t.equal((await api.call('DELETE', '/banned/bad-client?as=client_id')).body, 'ok')
  t.equal((await api.call('DELETE', '/banned/bad-client?as=client_id')).status, 404)
  const back = await connect(api.mqttUrl, { clientId: 'bad-client' })
  await closeAll(back)
})
