// /api/v2 refusals: 401, unknown route 404, unknown node 101, 107/108/109, a handler failure 500 (102) with the
// server still serving; GET /api/v2/ lists every operation of SPEC §4.5.
import t from 'tap'
import pino from 'pino'
import type { ServerContext } from '../apis.js'
import { routesV2 } from '../routes-v2.js'
import { createServer } from '../server.js'
import { withCluster } from './fake-node.js'
import { startV2Node } from './v2-api.js'
import { LoginLimit } from '../login-limit.js'

const api = await startV2Node()
t.teardown(async () => await api.stop())
const node = api.broker.node.name

t.test('unknown route → 404 {code: 102, result: []}; unknown node → 404 code 101', async (t) => {
  const res = await api.call('GET', '/no/such/thing')
  t.equal(res.status, 404)
  t.same(res.body, { code: 102, result: [], message: 'not found' })
  t.match(res.headers.get('content-type'), /^application\/json/)
  for (const path of ['/management/nodes/other@host', '/monitoring/nodes/other@host', '/nodes/other@host/clients', '/nodes/other@host/sessions/x',
    '/monitoring/listeners/other@host', '/monitoring/metrics/other@host', '/monitoring/stats/other@host', '/nodes/other@host/configs']) {
    const r = await api.call('GET', path)
    t.equal(r.status, 404, path)
    t.same(r.body, { code: 101, result: [], message: 'node not found' }, path)
  }
  t.match(await api.call('PUT', '/nodes/other@host/plugins/broker_plugin_template', { body: { active: true } }), { status: 404, body: { code: 101 } })
})

t.test('401 without or with bad credentials, in the v2 envelope', async (t) => {
  for (const auth of [null, 'admin:nope']) {
    const res = await api.call('GET', `/nodes/${node}/clients`, { auth })
    t.equal(res.status, 401)
    t.equal(res.headers.get('www-authenticate'), 'Basic realm="broker"')
    t.same(res.body, { code: 103, result: [], message: 'unauthorized' })
  }
  const res = await fetch(`${api.base}/users`, { headers: { authorization: 'Basic ###' } })
  t.equal(res.status, 401)
})

t.test('107 missing, 108 wrong type, 109 not JSON; paths with and without a trailing slash', async (t) => {
  t.match(await api.call('POST', '/mqtt/publish', { raw: '{not json' }), { status: 400, body: { code: 109, result: [], message: String } })
  t.match(await api.call('POST', '/mqtt/publish'), { status: 400, body: { code: 107, result: [] } })
  t.match(await api.call('POST', '/mqtt/publish', { body: { topic: 'a', qos: 3 } }), { status: 400, body: { code: 108 } })
  t.match(await api.call('GET', `/nodes/${node}/clients?curr_page=abc`), { status: 400, body: { code: 108, result: [] } })
  t.match(await api.call('GET', '/routes?page_size=0'), { status: 400, body: { code: 108 } })
  t.match(await api.call('PUT', '/configs/broker', { body: { key: 'no.such.key', value: '1' } }), { status: 404, body: { code: 102, result: [] } })
  for (const path of ['/routes', '/routes/', '/monitoring/metrics', '/monitoring/metrics/', '', '/']) t.equal((await api.call('GET', path)).status, 200, path)
})

t.test('GET /api/v2/ lists every operation of SPEC §4.5', async (t) => {
  const res = await api.call('GET', '/')
  const listed = (res.body as { code: number, result: Array<{ name: string, method: string, path: string, descr: string }> }).result
  t.equal(listed.length, routesV2.length)
  const rows = listed.map((l) => `${l.method} ${l.path}`)
  const spec = ['GET /management/nodes', 'GET /management/nodes/:node', 'GET /monitoring/nodes', 'GET /monitoring/nodes/:node', 'GET /nodes/:node/clients',
    'GET /nodes/:node/clients/:clientid', 'GET /clients/:clientid', 'DELETE /clients/:clientid', 'PUT /clients/:clientid/clean_acl_cache',
    'GET /nodes/:node/sessions', 'GET /nodes/:node/sessions/:clientid', 'GET /sessions/:clientid', 'GET /nodes/:node/subscriptions',
    'GET /nodes/:node/subscriptions/:clientid', 'GET /subscriptions/:clientid', 'GET /routes', 'GET /routes/:topic', 'POST /mqtt/publish',
    'POST /mqtt/subscribe', 'POST /mqtt/unsubscribe', 'GET /nodes/:node/plugins', 'PUT /nodes/:node/plugins/:plugin', 'GET /monitoring/listeners',
    'GET /monitoring/listeners/:node', 'GET /monitoring/metrics/', 'GET /monitoring/metrics/:node', 'GET /monitoring/stats', 'GET /monitoring/stats/:node',
    'GET /configs', 'GET /nodes/:node/configs', 'PUT /configs/:app', 'PUT /nodes/:node/configs/:app', 'GET /nodes/:node/plugin_configs/:plugin',
    'PUT /nodes/:node/plugin_configs/:plugin', 'GET /users', 'POST /users', 'PUT /users/:name', 'DELETE /users/:name', 'POST /auth', 'PUT /change_pwd/:username']
  t.equal(spec.length, 40)
  for (const row of spec) t.ok(rows.includes(row), row)
  t.same(rows.filter((r) => !spec.includes(r)), ['GET /', 'GET /openapi.json'], 'nothing else but the listing and the OpenAPI document')
})

t.test('a throwing node service method → 500 {code: 102}; the next request is served', async (t) => {
  let calls = 0
  const context = {
    node: withCluster({ name: 'fake@host', connections: () => { calls++; throw new Error('the store is on fire') }, statsV2: () => ({ 'clients/count': 0 }) }),
    apps: {},
    users: { verify: async (user: string, password: string) => user === 'admin' && password === 'public', get: async () => ({ username: 'admin', tags: 'administrator' }) },
    logins: new LoginLimit(0),
    maxRowLimit: 100
  } as unknown as ServerContext
  const server = await createServer({ host: '127.0.0.1', port: 0 }, context, pino({ level: 'silent' }))
  const headers = { authorization: `Basic ${Buffer.from('admin:public').toString('base64')}` }
  const failed = await server.inject({ method: 'GET', url: '/api/v2/nodes/fake@host/clients', headers })
  t.equal(calls, 1)
  t.equal(failed.statusCode, 500)
  t.same(JSON.parse(failed.payload), { code: 102, result: [], message: 'the store is on fire' })
  const next = await server.inject({ method: 'GET', url: '/api/v2/monitoring/stats/fake@host', headers })
  t.same([next.statusCode, JSON.parse(next.payload)], [200, { code: 0, result: { 'clients/count': 0 } }])
  t.equal((await server.inject({ method: 'GET', url: '/api/v2/nodes/fake@host/clients', headers })).statusCode, 500)
  t.equal(calls, 2)
})
