// client.check_acl against a real HTTP server: %A 1/2, %t, and the answers.
import t from 'tap'
import { clientInfo, type AclAccess } from '../../../lib/plugin-kit/testing.js'
import { load } from './load.js'
import { startAuthServer, type AuthServer } from './server.js'

let server: AuthServer
t.before(async () => { server = await startAuthServer() })
t.teardown(async () => { await server.close() })
t.beforeEach(() => {
  server.seen.length = 0
  server.answer(() => ({ status: 200 }))
})

const check = (access: AclAccess, topic: string) => ({
  client: clientInfo({ clientId: 'dev-9', username: 'carol', ipAddress: '192.0.2.7' }),
  access,
  topic
})

const settings = (): Record<string, string> => ({
  'auth.http.auth_req': server.url('/mqtt/auth'),
  'auth.http.acl_req': server.url('/mqtt/acl')
})

t.test('default GET with access=%A (1 subscribe, 2 publish), username, clientid, ipaddr, topic', async (t) => {
  const { checkAcl } = await load(t, settings())
  await checkAcl()(check('subscribe', 'a/+/#'))
  await checkAcl()(check('publish', 'a/b c&d=e'))
  t.strictSame(server.seen.map((s) => s.method), ['GET', 'GET'])
  t.strictSame(server.seen.map((s) => s.path), ['/mqtt/acl', '/mqtt/acl'])
  t.strictSame(server.seen[0].query, { access: '1', username: 'carol', clientid: 'dev-9', ipaddr: '192.0.2.7', topic: 'a/+/#' })
  t.strictSame(server.seen[1].query, { access: '2', username: 'carol', clientid: 'dev-9', ipaddr: '192.0.2.7', topic: 'a/b c&d=e' })
})

t.test('POST sends the ACL parameters as a form body', async (t) => {
  const { checkAcl } = await load(t, { ...settings(), 'auth.http.acl_req.method': 'post', 'auth.http.acl_req.params': 'a=%A,t=%t' })
  await checkAcl()(check('publish', 'x/y'))
  t.equal(server.seen[0].method, 'POST')
  t.equal(server.seen[0].contentType, 'application/x-www-form-urlencoded')
  t.strictSame(server.seen[0].form, { a: '2', t: 'x/y' })
})

t.test('200 → allow, 200 ignore → ignore, other status → deny', async (t) => {
  const { checkAcl } = await load(t, settings())
  const cases: Array<[status: number, body: string, expected: string]> = [
    [200, '', 'allow'],
    [200, 'allow', 'allow'],
    [200, 'ignore', 'ignore'],
    [401, '', 'deny'],
    [403, 'ignore', 'deny'],
    [404, '', 'deny'],
    [500, '', 'deny']
  ]
  for (const access of ['subscribe', 'publish'] as const) {
    for (const [status, body, expected] of cases) {
      server.answer(() => ({ status, body }))
      t.equal(await checkAcl()(check(access, 't/1')), expected, `${access}: ${status} ${JSON.stringify(body)}`)
    }
  }
})

t.test('the server decides per topic and access', async (t) => {
  const { checkAcl } = await load(t, settings())
  server.answer((seen) => seen.query.topic === 'open' || seen.query.access === '1' ? { status: 200 } : { status: 403 })
  t.equal(await checkAcl()(check('publish', 'open')), 'allow')
  t.equal(await checkAcl()(check('publish', 'closed')), 'deny')
  t.equal(await checkAcl()(check('subscribe', 'closed')), 'allow')
})

t.test('a handler never throws: an unexpected error is the auth.http.failure answer (deny by default), logged', async (t) => {
  const { checkAcl, logs } = await load(t, settings())
  const broken = { ...check('publish', 't'), client: undefined as unknown as ReturnType<typeof clientInfo> }
  t.equal(await checkAcl()(broken), 'deny')
  t.equal(server.seen.length, 0)
  t.match(logs.filter((l) => l.level === 50), [{ msg: 'HTTP ACL check failed', answer: 'deny' }])
  const ignoring = await load(t, { ...settings(), 'auth.http.failure': 'ignore' })
  t.equal(await ignoring.checkAcl()(broken), 'ignore')
})
