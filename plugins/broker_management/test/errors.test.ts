// Error statuses and bodies: 404 route and node, 400 codes 107/108/109, trailing slashes.
import t from 'tap'
import { startApiNode } from './api.js'

const api = await startApiNode()
t.teardown(async () => await api.stop())
const node = api.broker.node.name

t.test('unknown route → 404 JSON; unknown node → 404 node not found', async (t) => {
  const res = await api.call('GET', '/no/such/thing')
  t.equal(res.status, 404)
  t.match(res.body, { message: String })
  t.equal(res.headers.get('content-type')?.startsWith('application/json'), true)
  for (const path of ['/brokers/other@host', '/nodes/other@host', '/nodes/other@host/connections/', '/nodes/other@host/plugins/']) {
    const r = await api.call('GET', path)
    t.equal(r.status, 404, path)
    t.same(r.body, { message: 'node not found' }, path)
  }
  t.equal((await api.call('GET', `/nodes/${node}/listeners`)).status, 200)
})

t.test('paths work with and without a trailing slash', async (t) => {
  for (const path of ['/brokers', '/brokers/', `/brokers/${node}`, `/brokers/${node}/`, '/', '', '/banned', '/banned/']) {
    t.equal((await api.call('GET', path)).status, 200, path)
  }
})

t.test('body not JSON → 400 code 109', async (t) => {
  const res = await api.call('POST', '/banned/', { raw: '{not json' })
  t.equal(res.status, 400)
  t.match(res.body, { code: 109, message: String })
})

t.test('missing parameter → 107; wrong type → 108', async (t) => {
  t.match(await api.call('POST', '/banned/', { body: { as: 'client_id' } }), { status: 400, body: { code: 107, message: String } })
  t.match(await api.call('POST', '/banned/', { body: { who: 'x' } }), { status: 400, body: { code: 107 } })
  t.match(await api.call('POST', '/banned/', { body: { who: 'x', as: 'planet' } }), { status: 400, body: { code: 108 } })
  t.match(await api.call('POST', '/banned/', { body: { who: 'x', as: 'client_id', until: 'soon' } }), { status: 400, body: { code: 108 } })
  t.match(await api.call('POST', '/banned/'), { status: 400, body: { code: 107 } })
  t.match(await api.call('DELETE', '/banned/x'), { status: 400, body: { code: 107 } })
  t.match(await api.call('DELETE', '/banned/x?as=planet'), { status: 400, body: { code: 108 } })
  t.match(await api.call('GET', '/connections/?_page=abc'), { status: 400, body: { code: 108 } })
  t.match(await api.call('GET', '/connections/?_limit=0'), { status: 400, body: { code: 108 } })
  t.match(await api.call('PUT', '/configs/broker', { body: { key: 'mqtt.allow_anonymous' } }), { status: 400, body: { code: 107 } })
  t.match(await api.call('PUT', '/configs/broker', { body: { key: 'mqtt.allow_anonymous', value: 1 } }), { status: 400, body: { code: 108 } })
  t.match(await api.call('PUT', '/configs/broker', { body: { key: 'mqtt.allow_anonymous', value: 'maybe' } }), { status: 400, body: { code: 108 } })
  t.match(await api.call('PUT', '/configs/broker', { body: { key: 'no.such.key', value: '1' } }), { status: 404, body: { message: String } })
  // the server still serves after every refusal
  t.equal((await api.call('GET', '/brokers/')).status, 200)
})
