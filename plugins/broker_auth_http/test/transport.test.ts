// What happens when the HTTP server is slow, down or flaky: timeouts,
// connection refused, retries, keep-alive reuse, the pool limit, failure logs.
import t from 'tap'
import { clientInfo } from '../../../lib/plugin-kit/testing.js'
import { load } from './load.js'
import { deadPort, startAuthServer, until, type AuthServer } from './server.js'

let server: AuthServer
t.before(async () => { server = await startAuthServer() })
t.teardown(async () => { await server.close() })
t.beforeEach(() => {
  server.seen.length = 0
  server.answer(() => ({ status: 200 }))
})

const DENY = { result: 'deny', reason: 'not_authorized' }
const auth = { client: clientInfo({ username: 'u' }), password: Buffer.from('p') }
const acl = { client: clientInfo({ username: 'u' }), access: 'publish' as const, topic: 't' }

/** The time from the call (its synchronous part included) to its answer. */
async function timed<T> (work: () => T | Promise<T>): Promise<[T, number]> {
  const start = Date.now()
  const value = await work()
  return [value, Date.now() - start]
}

t.test('a server that never answers: deny (auth and ACL, auth.http.failure default) once the timeout passes', async (t) => {
  const { authenticate, checkAcl } = await load(t, {
    'auth.http.auth_req': server.url('/mqtt/auth'),
    'auth.http.acl_req': server.url('/mqtt/acl'),
    'auth.http.request.timeout': '400ms'
  })
  server.answer(() => 'hang')
  const [authAnswer, authMs] = await timed(() => authenticate(auth))
  t.strictSame(authAnswer, DENY)
  t.ok(authMs >= 380 && authMs < 1400, `auth answered after ${authMs}ms`)
  const [aclAnswer, aclMs] = await timed(() => checkAcl()(acl))
  t.equal(aclAnswer, 'deny')
  t.ok(aclMs >= 380 && aclMs < 1400, `ACL answered after ${aclMs}ms`)
  t.equal(server.seen.length, 2, 'a timed-out request is not retried')
})

t.test('timeout as bare seconds', async (t) => {
  const { authenticate } = await load(t, { 'auth.http.auth_req': server.url('/mqtt/auth'), 'auth.http.request.timeout': '1' })
  server.answer(() => 'hang')
  const [answer, ms] = await timed(() => authenticate(auth))
  t.strictSame(answer, DENY)
  t.ok(ms >= 950 && ms < 2500, `answered after ${ms}ms`)
})

t.test('connection refused: deny (auth and ACL), without waiting for the timeout', async (t) => {
  const port = await deadPort()
  const { authenticate, checkAcl, logs } = await load(t, {
    'auth.http.auth_req': `http://127.0.0.1:${port}/mqtt/auth`,
    'auth.http.acl_req': `http://127.0.0.1:${port}/mqtt/acl`,
    'auth.http.request.retry_times': '0'
  })
  const [answer, ms] = await timed(() => authenticate(auth))
  t.strictSame(answer, DENY)
  t.ok(ms < 1000, `refused in ${ms}ms`)
  t.equal(await checkAcl()(acl), 'deny')
  const warned = logs.filter((l) => l.level === 40)
  t.strictSame(warned.map((l) => [l.url, l.code]), [
    [`http://127.0.0.1:${port}/mqtt/auth`, 'ECONNREFUSED'],
    [`http://127.0.0.1:${port}/mqtt/acl`, 'ECONNREFUSED']
  ])
})

t.test('connection refused with retries: 3 retries with a doubling interval, still within the timeout', async (t) => {
  const port = await deadPort()
  const { authenticate } = await load(t, {
    'auth.http.auth_req': `http://127.0.0.1:${port}/mqtt/auth`,
    'auth.http.request.retry_interval': '50ms'
  })
  const [answer, ms] = await timed(() => authenticate(auth))
  t.strictSame(answer, DENY)
  t.ok(ms >= 50 + 100 + 200 && ms < 1500, `3 retries took ${ms}ms (50 + 100 + 200 ms of waiting)`)
})

t.test('a dropped connection is retried; with retry_times = 0 it is a deny', async (t) => {
  let drops = 1
  server.answer(() => drops-- > 0 ? 'drop' : { status: 200 })
  const retried = await load(t, { 'auth.http.auth_req': server.url('/mqtt/auth'), 'auth.http.request.retry_interval': '10ms' })
  t.strictSame(await retried.authenticate(auth), { result: 'allow', superuser: false })
  t.equal(server.seen.length, 2, 'sent twice')

  server.seen.length = 0
  drops = 1
  const once = await load(t, { 'auth.http.auth_req': server.url('/mqtt/auth'), 'auth.http.request.retry_times': '0' })
  t.strictSame(await once.authenticate(auth), DENY)
  t.equal(server.seen.length, 1, 'sent once')
})

t.test('an HTTP error status is an answer, never retried', async (t) => {
  const { authenticate } = await load(t, { 'auth.http.auth_req': server.url('/mqtt/auth') })
  server.answer(() => ({ status: 503 }))
  t.strictSame(await authenticate(auth), DENY)
  t.equal(server.seen.length, 1)
})

t.test('keep-alive: sequential requests reuse their TCP connections', async (t) => {
  const { authenticate, checkAcl } = await load(t, {
    'auth.http.auth_req': server.url('/mqtt/auth'),
    'auth.http.acl_req': server.url('/mqtt/acl')
  })
  const before = server.connections
  for (let i = 0; i < 4; i++) {
    await authenticate(auth)
    await checkAcl()(acl)
  }
  t.equal(server.seen.length, 8)
  // undici hands a socket back to its pool a tick after the answer, so a request sent at once may open a second one
  t.ok(server.connections - before <= 2, `eight requests over ${server.connections - before} connections (at most two)`)
})

t.test('pool_size bounds the sockets open at once', async (t) => {
  const { authenticate } = await load(t, { 'auth.http.auth_req': server.url('/mqtt/auth'), 'auth.http.pool_size': '2' })
  const before = server.connections
  server.held.length = 0
  server.answer(() => 'hang')
  const answers = Promise.all(Array.from({ length: 6 }, async () => await authenticate(auth)))
  await until(() => server.held.length === 2, 2000, 'two requests in flight')
  await new Promise((resolve) => setTimeout(resolve, 100))
  t.equal(server.held.length, 2, 'only two requests reach the server while both sockets are busy')
  server.answer(() => ({ status: 200 }))
  for (const respond of server.held.splice(0)) respond()
  t.strictSame(await answers, Array(6).fill({ result: 'allow', superuser: false }))
  t.equal(server.connections - before, 2, 'six requests over two connections')
})

t.test('transport failures are logged once per burst', async (t) => {
  const { authenticate, logs } = await load(t, {
    'auth.http.auth_req': server.url('/mqtt/auth'),
    'auth.http.request.retry_times': '0'
  })
  server.answer(() => 'drop')
  for (let i = 0; i < 4; i++) t.strictSame(await authenticate(auth), DENY)
  const warnings = (): Array<Record<string, unknown>> => logs.filter((l) => l.level === 40)
  t.equal(warnings().length, 1, 'one warning for four failures')
  t.equal(warnings()[0].url, server.url('/mqtt/auth'))
  t.type(warnings()[0].code, 'string')
  t.type(warnings()[0].error, 'string')

  server.answer(() => ({ status: 401 }))
  t.strictSame(await authenticate(auth), DENY)
  t.equal(logs.filter((l) => l.level === 30 && l.url === server.url('/mqtt/auth')).length, 1, 'an answer ends the burst')

  server.answer(() => 'drop')
  await authenticate(auth)
  await authenticate(auth)
  t.equal(warnings().length, 2, 'a new burst warns again')
})

t.test('unload ends the keep-alive connections and fails calls in flight', async (t) => {
  const { authenticate, unload } = await load(t, {
    'auth.http.auth_req': server.url('/mqtt/auth'),
    'auth.http.request.timeout': '10s'
  })
  await authenticate(auth)
  t.ok(server.open.size >= 1, 'a kept-alive connection is open')
  server.answer(() => 'hang')
  const pending = authenticate(auth)
  await until(() => server.seen.length === 2, 2000, 'the second request')
  const [answer, ms] = await timed(async () => await Promise.all([unload(), pending]).then(([, a]) => a))
  t.strictSame(answer, DENY, 'the call in flight is denied')
  t.ok(ms < 1000, `at once (${ms}ms), not after the 10s timeout`)
  await until(() => server.open.size === 0, 2000, 'the server to see every connection closed')
  t.strictSame(await authenticate(auth), DENY, 'a call after unload is denied at once')
  t.equal(server.seen.length, 2, 'and sends nothing')
})
