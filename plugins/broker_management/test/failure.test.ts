// A handler that throws: 500 {message}, and the server keeps serving.
import t from 'tap'
import pino from 'pino'
import { routes, type ApiContext } from '../routes.js'
import { withCluster } from './fake-node.js'
import { createServer } from '../server.js'
import { LoginLimit } from '../login-limit.js'

const auth = { authorization: `Basic ${Buffer.from('admin:public').toString('base64')}` }

t.test('a throwing node service method → 500 {message}; the next request is served', async (t) => {
  let calls = 0
  // only what these requests reach: the application check and two node service members
  const api = {
    node: withCluster({
      name: 'fake@host',
      sessions: () => { calls++; throw new Error('the store is on fire') },
      alarms: () => []
    }),
    apps: { verify: async (id: string, secret: string) => id === 'admin' && secret === 'public', role: async () => 'administrator' },
    users: {},
    logins: new LoginLimit(0),
    maxRowLimit: 100,
    routes
  } as unknown as ApiContext
  const server = await createServer({ host: '127.0.0.1', port: 0 }, api, pino({ level: 'silent' }))

  const failed = await server.inject({ method: 'GET', url: '/api/v3/sessions/', headers: auth })
  t.equal(calls, 1, 'the handler ran')
  t.equal(failed.statusCode, 500)
  t.match(failed.headers['content-type'], /^application\/json/)
  t.same(JSON.parse(failed.payload), { message: 'the store is on fire' })

  const next = await server.inject({ method: 'GET', url: '/api/v3/alarms/', headers: auth })
  t.equal(next.statusCode, 200)
  t.same(JSON.parse(next.payload), [{ node: 'fake@host', alarms: [] }])
  const listing = await server.inject({ method: 'GET', url: '/api/v3/', headers: auth })
  t.equal(listing.statusCode, 200)
  t.equal((JSON.parse(listing.payload) as unknown[]).length, routes.length)

  // and again: a second failure is still a 500, not a broken server
  t.equal((await server.inject({ method: 'GET', url: '/api/v3/sessions/', headers: auth })).statusCode, 500)
  t.equal(calls, 2)
})

t.test('an async (rejected) failure is a 500 too', async (t) => {
  const api = {
    node: withCluster({ name: 'fake@host', sessions: async () => await Promise.reject(new Error('later')) }),
    apps: { verify: async () => true, role: async () => 'administrator' },
    users: {},
    logins: new LoginLimit(0),
    maxRowLimit: 100,
    routes
  } as unknown as ApiContext
  const server = await createServer({ host: '127.0.0.1', port: 0 }, api, pino({ level: 'silent' }))
  const res = await server.inject({ method: 'GET', url: '/api/v3/sessions/', headers: auth })
  t.equal(res.statusCode, 500)
  t.same(JSON.parse(res.payload), { message: 'later' })
})

t.test('the store unreachable (a cluster\'s Redis down): a request that needs a login is answered 503 at once, one without credentials as before', async (t) => {
  let storeUp = false
  let checks = 0
  const api = {
    node: withCluster({
      name: 'fake@host',
      alarms: () => [],
      health: () => ({ status: 'running', reasons: storeUp ? [] : ['store_unavailable'] }),
      brokerInfo: () => ({ uptime: '1 seconds' })
    }),
    // the logins are in the store: a check would wait for it
    apps: { verify: async () => { checks++; return true }, role: async () => 'administrator' },
    users: { verify: async () => { checks++; return true }, get: async () => ({ tags: 'administrator' }) },
    logins: new LoginLimit(0),
    maxRowLimit: 100,
    routes
  } as unknown as ApiContext
  const server = await createServer({ host: '127.0.0.1', port: 0 }, api, pino({ level: 'silent' }))
  for (const url of ['/api/v3/alarms/', '/api/v2/monitoring/nodes']) {
    const res = await server.inject({ method: 'GET', url, headers: auth })
    t.equal(res.statusCode, 503, `${url}: 503`)
    t.match(res.headers['content-type'], /^application\/json/)
    t.equal(res.headers['retry-after'], '5', 'with Retry-After')
    t.match(JSON.parse(res.payload), { message: /^store_unavailable: / }, 'and why, in the API\'s own shape')
  }
  t.equal(checks, 0, 'no login checked (it would wait for the store)')
  const status = await server.inject({ method: 'GET', url: '/status' })
  t.equal(status.statusCode, 503, '/status (no credentials) answers as before')
  t.same(JSON.parse(status.payload).reasons, ['store_unavailable'])
  storeUp = true
  const back = await server.inject({ method: 'GET', url: '/api/v3/alarms/', headers: auth })
  t.equal(back.statusCode, 200, 'served again once the store is back')
  t.equal(checks, 1)
})
