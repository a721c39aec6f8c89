// client.authenticate against a real HTTP server: answers, status codes,
// GET/POST encoding, superuser and mountpoint.
import t from 'tap'
import { clientInfo } from '../../../lib/plugin-kit/testing.js'
import { load } from './load.js'
import { startAuthServer, type AuthServer } from './server.js'

let server: AuthServer
t.before(async () => { server = await startAuthServer() })
t.teardown(async () => { await server.close() })
t.beforeEach(() => {
  server.seen.length = 0
  server.answer(() => ({ status: 200 }))
})

const request = (username?: string, password?: string) => ({
  client: clientInfo({ clientId: 'dev-1', username, ipAddress: '10.1.2.3' }),
  password: password === undefined ? undefined : Buffer.from(password)
})

t.test('status codes and bodies decide allow, deny or ignore', async (t) => {
  const { authenticate } = await load(t, { 'auth.http.auth_req': server.url('/mqtt/auth') })
  const cases: Array<[status: number, body: string, expected: unknown]> = [
    [200, '', { result: 'allow', superuser: false }],
    [200, 'ok', { result: 'allow', superuser: false }],
    [200, 'ignore', 'ignore'],
    [200, 'ignore\n', 'ignore'],
    [200, 'ignored', { result: 'allow', superuser: false }],
    [401, '', { result: 'deny', reason: 'not_authorized' }],
    [403, 'ignore', { result: 'deny', reason: 'not_authorized' }],
    [500, 'boom', { result: 'deny', reason: 'not_authorized' }],
    [204, '', { result: 'deny', reason: 'not_authorized' }]
  ]
  for (const [status, body, expected] of cases) {
    server.answer(() => ({ status, body }))
    t.strictSame(await authenticate(request('alice', 'secret')), expected, `${status} ${JSON.stringify(body)}`)
  }
})

t.test('default POST: a form body with clientid, username and password', async (t) => {
  const { authenticate } = await load(t, { 'auth.http.auth_req': server.url('/mqtt/auth') })
  await authenticate(request('alice', 'pa ss'))
  t.equal(server.seen.length, 1)
  const [seen] = server.seen
  t.equal(seen.method, 'POST')
  t.equal(seen.path, '/mqtt/auth')
  t.strictSame(seen.query, {})
  t.equal(seen.contentType, 'application/x-www-form-urlencoded')
  t.strictSame(seen.form, { clientid: 'dev-1', username: 'alice', password: 'pa ss' })
  t.strictSame([...new URLSearchParams(seen.rawBody).keys()], ['clientid', 'username', 'password'], 'in the configured order')
})

t.test('a username with &, = and spaces arrives intact (POST and GET)', async (t) => {
  const tricky = 'a&b=c d+e%41,f'
  const post = await load(t, { 'auth.http.auth_req': server.url('/mqtt/auth') })
  await post.authenticate(request(tricky, 'p&w=1'))
  t.strictSame(server.seen[0].form, { clientid: 'dev-1', username: tricky, password: 'p&w=1' })
  const get = await load(t, { 'auth.http.auth_req': server.url('/mqtt/auth'), 'auth.http.auth_req.method': 'get' })
  await get.authenticate(request(tricky, 'p&w=1'))
  t.strictSame(server.seen[1].query, { clientid: 'dev-1', username: tricky, password: 'p&w=1' })
})

t.test('GET: the parameters are the query string, no body; an existing query is kept', async (t) => {
  const { authenticate } = await load(t, {
    'auth.http.auth_req': server.url('/mqtt/auth?app=7'),
    'auth.http.auth_req.method': 'GET',
    'auth.http.auth_req.params': 'u=%u,c=%c,ip=%a,pw=%P,fixed=x%%y,t=%t'
  })
  await authenticate(request('bob', 'pw'))
  const [seen] = server.seen
  t.equal(seen.method, 'GET')
  t.equal(seen.path, '/mqtt/auth')
  t.equal(seen.rawBody, '')
  t.strictSame(seen.query, { app: '7', u: 'bob', c: 'dev-1', ip: '10.1.2.3', pw: 'pw', fixed: 'x%%y', t: '' })
})

t.test('an absent username or password is sent as an empty value', async (t) => {
  const { authenticate } = await load(t, { 'auth.http.auth_req': server.url('/mqtt/auth') })
  await authenticate(request(undefined, undefined))
  t.strictSame(server.seen[0].form, { clientid: 'dev-1', username: '', password: '' })
})

t.test('a JSON 200 body with a string mountpoint sets the mountpoint', async (t) => {
  const { authenticate } = await load(t, { 'auth.http.auth_req': server.url('/mqtt/auth') })
  server.answer(() => ({ status: 200, body: '{"mountpoint":"tenant/a/"}' }))
  t.strictSame(await authenticate(request('a', 'b')), { result: 'allow', superuser: false, mountpoint: 'tenant/a/' })
  server.answer(() => ({ status: 200, body: '{"mountpoint":5}' }))
  t.strictSame(await authenticate(request('a', 'b')), { result: 'allow', superuser: false }, 'not a string: ignored')
  server.answer(() => ({ status: 200, body: '{not json' }))
  t.strictSame(await authenticate(request('a', 'b')), { result: 'allow', superuser: false }, 'not JSON: still allowed')
})

t.test('a JSON 200 body with a string username gives the user name as the server stores it', async (t) => {
  const { authenticate } = await load(t, { 'auth.http.auth_req': server.url('/mqtt/auth') })
  server.answer(() => ({ status: 200, body: '{"username":"alice","mountpoint":"m/"}' }))
  t.strictSame(await authenticate(request('ALICE', 'b')), { result: 'allow', superuser: false, mountpoint: 'm/', username: 'alice' })
  server.answer(() => ({ status: 200, body: '{"username":""}' }))
  t.strictSame(await authenticate(request('ALICE', 'b')), { result: 'allow', superuser: false }, 'empty: ignored')
})

t.test('superuser: asked only after an allow; 200 → superuser, anything else → not', async (t) => {
  const { authenticate } = await load(t, {
    'auth.http.auth_req': server.url('/mqtt/auth'),
    'auth.http.super_req': server.url('/mqtt/superuser')
  })
  let superStatus = 200
  let authStatus = 200
  server.answer((seen) => seen.path === '/mqtt/superuser' ? { status: superStatus } : { status: authStatus })

  t.strictSame(await authenticate(request('root', 'pw')), { result: 'allow', superuser: true })
  t.strictSame(server.seen.map((s) => `${s.method} ${s.path}`), ['POST /mqtt/auth', 'POST /mqtt/superuser'])
  t.strictSame(server.seen[1].form, { clientid: 'dev-1', username: 'root' }, 'default superuser params')

  superStatus = 403
  t.strictSame(await authenticate(request('user', 'pw')), { result: 'allow', superuser: false }, 'still allowed')

  server.seen.length = 0
  authStatus = 401
  t.strictSame(await authenticate(request('user', 'bad')), { result: 'deny', reason: 'not_authorized' })
  t.strictSame(server.seen.map((s) => s.path), ['/mqtt/auth'], 'no superuser request after a deny')

  server.seen.length = 0
  authStatus = 200
  server.answer((seen) => seen.path === '/mqtt/superuser' ? { status: 200 } : { status: 200, body: 'ignore' })
  t.equal(await authenticate(request('user', 'pw')), 'ignore')
  t.strictSame(server.seen.map((s) => s.path), ['/mqtt/auth'], 'no superuser request after an ignore')
})

t.test('superuser request that gets no answer: allowed, not superuser', async (t) => {
  const { authenticate } = await load(t, {
    'auth.http.auth_req': server.url('/mqtt/auth'),
    'auth.http.super_req': server.url('/mqtt/superuser'),
    'auth.http.request.timeout': '300ms'
  })
  server.answer((seen) => seen.path === '/mqtt/superuser' ? 'drop' : { status: 200 })
  t.strictSame(await authenticate(request('u', 'p')), { result: 'allow', superuser: false })
})

t.test('without acl_req no check_acl handler is added', async (t) => {
  const { ctx } = await load(t, { 'auth.http.auth_req': server.url('/mqtt/auth'), 'auth.http.acl_req': '' })
  t.strictSame([...ctx.added.keys()], ['client.authenticate'])
})

t.test('a handler never throws: an unexpected error is a deny, logged', async (t) => {
  const { authenticate, logs } = await load(t, { 'auth.http.auth_req': server.url('/mqtt/auth') })
  const broken = { client: undefined as unknown as ReturnType<typeof clientInfo> }
  t.strictSame(await authenticate(broken), { result: 'deny', reason: 'not_authorized' })
  t.equal(server.seen.length, 0)
  t.match(logs.filter((l) => l.level === 50), [{ msg: 'HTTP authentication failed; denied' }])
})
