// POST /mqtt/publish, /mqtt/subscribe, /mqtt/unsubscribe (SPEC §4.3), observed by real MQTT clients.
import t from 'tap'
import { closeAll, connect, nextMessages, noMessageWithin } from '../../../test/helpers/mqtt.js'
import { startApiNode } from './api.js'

// with the retainer, so a message published with retain is kept for a later subscriber
const api = await startApiNode({}, {}, ['tcp'], { broker_retainer: {} })
t.teardown(async () => await api.stop())

t.test('POST /mqtt/publish: a real subscriber receives the message; defaults; bad topics', async (t) => {
  const sub = await connect(api.mqttUrl, { clientId: 'pub-watcher' })
  t.teardown(async () => await closeAll(sub))
  await sub.subscribeAsync('api/#', { qos: 1 })

  const got = nextMessages(sub, 1)
  const res = await api.call('POST', '/mqtt/publish', { body: { topic: 'api/one', payload: 'hello', qos: 1, client_id: 'tester' } })
  t.equal(res.status, 200)
  t.same(res.body, { code: 0 })
  t.match(await got, [{ topic: 'api/one', payload: 'hello', qos: 1, retain: false }])

  // defaults: payload "", qos 0, retain false
  const plain = nextMessages(sub, 1)
  t.same((await api.call('POST', '/mqtt/publish', { body: { topic: 'api/two' } })).body, { code: 0 })
  t.match(await plain, [{ topic: 'api/two', payload: '', qos: 0, retain: false }])

  // retain: a later subscriber gets it
  t.same((await api.call('POST', '/mqtt/publish', { body: { topic: 'kept/x', payload: 'r', retain: true } })).body, { code: 0 })
  const late = await connect(api.mqttUrl, { clientId: 'late' })
  t.teardown(async () => await closeAll(late))
  const retained = nextMessages(late, 1)
  await late.subscribeAsync('kept/x')
  t.match(await retained, [{ topic: 'kept/x', payload: 'r', retain: true }])

  t.match(await api.call('POST', '/mqtt/publish', { body: { topic: 'api/+' } }), { status: 400, body: { code: 115 } })
  t.match(await api.call('POST', '/mqtt/publish', { body: { topic: 'api/#' } }), { status: 400, body: { code: 115 } })
  t.match(await api.call('POST', '/mqtt/publish', { body: { payload: 'x' } }), { status: 400, body: { code: 107 } })
  t.match(await api.call('POST', '/mqtt/publish', { body: { topic: 'a', qos: 3 } }), { status: 400, body: { code: 108 } })
  t.ok(await noMessageWithin(sub, 200), 'refused publishes deliver nothing')
})

t.test('POST /mqtt/subscribe and /mqtt/unsubscribe on behalf of a connected client', async (t) => {
  const client = await connect(api.mqttUrl, { clientId: 'on-behalf' })
  t.teardown(async () => await closeAll(client))

  const res = await api.call('POST', '/mqtt/subscribe', { body: { client_id: 'on-behalf', topic: 'cmd/+', qos: 1 } })
  t.equal(res.status, 200)
  t.same(res.body, { code: 0 })
  t.same((await api.call('GET', '/subscriptions/on-behalf')).body, [{ node: api.broker.node.name, client_id: 'on-behalf', topic: 'cmd/+', qos: 1 }])

  const got = nextMessages(client, 1)
  const publisher = await connect(api.mqttUrl, { clientId: 'commander' })
  t.teardown(async () => await closeAll(publisher))
  await publisher.publishAsync('cmd/go', 'now', { qos: 1 })
  t.match(await got, [{ topic: 'cmd/go', payload: 'now', qos: 1 }])

  const off = await api.call('POST', '/mqtt/unsubscribe', { body: { client_id: 'on-behalf', topic: 'cmd/+' } })
  t.equal(off.status, 200)
  t.same(off.body, { code: 0 })
  t.same((await api.call('GET', '/subscriptions/on-behalf')).body, [])
  await publisher.publishAsync('cmd/go', 'again', { qos: 1 })
  t.ok(await noMessageWithin(client, 300), 'no message after the unsubscribe')

  t.match(await api.call('POST', '/mqtt/subscribe', { body: { client_id: 'nobody', topic: 'a' } }), { status: 404, body: { code: 112 } })
  t.match(await api.call('POST', '/mqtt/unsubscribe', { body: { client_id: 'nobody', topic: 'a' } }), { status: 404, body: { code: 112 } })
  t.match(await api.call('POST', '/mqtt/subscribe', { body: { client_id: 'on-behalf', topic: 'a/#/b' } }), { status: 400, body: { code: 115 } })
  t.match(await api.call('POST', '/mqtt/subscribe', { body: { topic: 'a' } }), { status: 400, body: { code: 107 } })
})
