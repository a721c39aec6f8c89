// broker_dashboard over plain HTTP against one real node (with
// broker_management): login, the session cookie and CSRF gate, /api/me,
// logout, the v3 API forwarded, roles, the own password, the samples, the
// static files, HTTPS, unload/load at run time, without broker_management,
// and the failed-login limit (last: it blocks the address for a minute).
import { readFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { request } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { INSTALL_ROOT, freePort, startPluginNode, type PluginNode } from '../../../lib/plugin-kit/testing.js'
import { ConsoleClient } from './console-client.js'

const LOGIN_RATE = 5

/** A GET with the path sent byte for byte. */
async function rawGet (base: string, path: string): Promise<{ status: number, body: string }> {
  const { hostname, port } = new URL(base)
  return await new Promise((resolve, reject) => {
    request({ host: hostname, port, path, method: 'GET' }, (res) => {
      let body = ''
      res.setEncoding('utf8').on('data', (chunk: string) => { body += chunk }).on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    }).on('error', reject).end()
  })
}

async function portRefuses (port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => { socket.destroy(); resolve(false) })
    socket.once('error', () => resolve(true))
  })
}

interface Listener { protocol: string, listen_on: string }

let node: PluginNode
let base: string
let httpPort: number
let httpsPort: number
let apiPort: number
let docroot: string

/** the management listener, HTTP Basic as the default application */
async function management (method: string, path: string, body?: unknown): Promise<{ status: number, body: unknown }> {
  const res = await fetch(`http://127.0.0.1:${apiPort}/api/v3${path}`, {
    method,
    headers: { authorization: `Basic ${Buffer.from('admin:public').toString('base64')}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  const text = await res.text()
  return { status: res.status, body: text === '' ? text : JSON.parse(text) }
}

async function loggedIn (username = 'admin', password = 'public'): Promise<ConsoleClient> {
  const client = new ConsoleClient(base)
  const answer = await client.login(username, password)
  if (answer.status !== 200) throw new Error(`login ${username}: ${answer.status} ${answer.text}`)
  return client
}

t.before(async () => {
  docroot = await mkdtemp(join(tmpdir(), 'dashboard-dist-'))
  await mkdir(join(docroot, 'assets'))
  await writeFile(join(docroot, 'index.html'), '<!doctype html><title>console</title><script src="/assets/app-1a2b.js"></script>')
  await writeFile(join(docroot, 'assets', 'app-1a2b.js'), 'console.log("app")')
  await writeFile(join(docroot, 'assets', 'app-1a2b.css'), 'body{}')
  ;[httpPort, httpsPort, apiPort] = [await freePort(), await freePort(), await freePort()]
  node = await startPluginNode({
    plugin: 'broker_dashboard',
    settings: {
      'dashboard.listener.http': `127.0.0.1:${httpPort}`,
      'dashboard.listener.https': `127.0.0.1:${httpsPort}`,
      'dashboard.listener.https.cacertfile': 'etc/certs/cacert.pem',
      'dashboard.docroot': docroot,
      'dashboard.sample_interval': '1s'
    },
    others: { broker_management: { 'management.listener.http': `127.0.0.1:${apiPort}`, 'management.login_rate': LOGIN_RATE } }
  })
  base = `http://127.0.0.1:${httpPort}`
})
t.teardown(async () => {
  await node?.stop()
  await rm(docroot, { recursive: true, force: true })
})

t.test('the listeners API lists http:dashboard and https:dashboard (v2: dashboard:http)', async (t) => {
  const [{ listeners }] = (await management('GET', '/listeners/')).body as Array<{ listeners: Listener[] }>
  t.match(listeners.find((l) => l.protocol === 'http:dashboard'), { listen_on: `127.0.0.1:${httpPort}`, acceptors: 2, max_conns: 512 })
  t.match(listeners.find((l) => l.protocol === 'https:dashboard'), { listen_on: `127.0.0.1:${httpsPort}` })
  const v2 = await fetch(`http://127.0.0.1:${apiPort}/api/v2/monitoring/listeners/${encodeURIComponent(node.node.name)}`, { headers: { authorization: `Basic ${Buffer.from('admin:public').toString('base64')}` } })
  t.match(JSON.stringify(await v2.json()), /"protocol":"dashboard:http"/)
})

t.test('login answers the user, role and CSRF token with an HttpOnly SameSite=Strict cookie', async (t) => {
  const client = new ConsoleClient(base)
  const answer = await client.login('admin', 'public')
  t.equal(answer.status, 200)
  t.match(answer.body, { username: 'admin', role: 'administrator', csrf_token: /^[\w-]{20,}$/ })
  const cookie = answer.headers.get('set-cookie') ?? ''
  t.match(cookie, /^broker_dashboard_session=[\w-]{20,};/)
  t.match(cookie, /; HttpOnly/)
  t.match(cookie, /; SameSite=Strict/)
  t.match(cookie, /; Path=\//)
  t.notMatch(cookie, /Secure/, 'not Secure over plain HTTP')
  t.same((await client.call('GET', '/api/me')).body, answer.body, '/api/me answers the same')
  t.equal((await client.call('GET', '/api/me', undefined, { cookie: 'broker_dashboard_session=made-up' })).status, 401, 'a made-up cookie is no session')
  t.equal((await client.call('POST', '/api/login', { username: 'admin' })).status, 400, 'no password: 400')
})

t.test('a wrong password is 401 and sets no cookie', async (t) => {
  const client = new ConsoleClient(base)
  const answer = await client.login('admin', 'wrong')
  t.same([answer.status, answer.body], [401, { message: 'wrong user name or password' }])
  t.equal(answer.headers.get('set-cookie'), null)
  t.equal((await client.call('GET', '/api/me')).status, 401)
})

t.test('every change needs the session\'s CSRF token', async (t) => {
  const client = await loggedIn()
  const other = await loggedIn()
  const ban = { who: 'csrf-client', as: 'client_id', reason: 'test' }
  for (const [why, csrf] of [['missing', null], ['wrong', 'x'.repeat(43)], ['another session\'s', other.csrf]] as const) {
    const answer = await client.call('POST', '/api/v3/banned/', ban, { csrf })
    t.same([answer.status, answer.body], [403, { message: 'missing or wrong CSRF token' }], why)
  }
  t.same(((await management('GET', '/banned/')).body as { items: unknown[] }).items, [], 'nothing was banned')
  t.equal((await client.call('PUT', '/api/me/password', { old_password: 'public', new_password: 'whatever-1' }, { csrf: null })).status, 403, 'the console\'s own changes too')
  t.equal((await client.call('POST', '/api/logout', undefined, { csrf: null })).status, 403)
  t.equal((await new ConsoleClient(base).call('POST', '/api/v3/banned/', ban)).status, 401, 'no session: 401')
  const done = await client.call('POST', '/api/v3/banned/', ban)
  t.equal(done.status, 200, 'with the token it works')
  t.match(((await management('GET', '/banned/')).body as { items: unknown[] }).items, [{ who: 'csrf-client' }])
  t.equal((await client.call('DELETE', '/api/v3/banned/csrf-client?as=client_id')).status, 200)
})

t.test('the v3 API through the session equals the management listener', async (t) => {
  const client = await loggedIn()
  // listings that do not change from one call to the next (no clock, no connection counts)
  for (const path of ['/users/', '/banned/', '/configs/', '/routes/', '/apps/']) {
    const viaDashboard = await client.call('GET', `/api/v3${path}`)
    t.equal(viaDashboard.status, 200, path)
    t.same(viaDashboard.body, (await management('GET', path)).body, path)
  }
  const nodes = (await client.call('GET', '/api/v3/nodes/')).body as Array<{ node: string }>
  t.same(nodes.map((n) => n.node), [node.node.name])
  const bad = await client.call('POST', '/api/v3/mqtt/publish', { topic: 'a/#', payload: 'x' })
  t.same([bad.status, bad.body], [(await management('POST', '/mqtt/publish', { topic: 'a/#', payload: 'x' })).status, (await management('POST', '/mqtt/publish', { topic: 'a/#', payload: 'x' })).body], 'a refusal too')
  const notJson = await fetch(`${base}/api/v3/mqtt/publish`, { method: 'POST', headers: { cookie: client.cookie ?? '', 'x-csrf-token': client.csrf ?? '', 'content-type': 'application/json' }, body: '{' })
  t.match([notJson.status, await notJson.json()], [400, { code: 109 }])
  t.same([(await client.call('GET', '/api/v3/no/such/route')).status], [404])
  const wrongMethod = await client.call('PATCH', '/api/v3/brokers/')
  t.equal(wrongMethod.status, 405)
  t.match(wrongMethod.headers.get('allow'), /GET/)
  const anonymous = await new ConsoleClient(base).call('GET', '/api/v3/nodes/')
  t.same([anonymous.status, anonymous.body], [401, { message: 'unauthorized' }])
  t.equal(anonymous.headers.get('www-authenticate'), null, 'no Basic challenge: the browser must not ask')
})

t.test('a viewer reads but every change is 403', async (t) => {
  t.equal((await management('POST', '/users/', { username: 'watcher', password: 'watcher-pw', tags: 'viewer' })).status, 200)
  const viewer = await loggedIn('watcher', 'watcher-pw')
  t.match((await viewer.call('GET', '/api/me')).body, { username: 'watcher', role: 'viewer' })
  t.equal((await viewer.call('GET', '/api/v3/connections/')).status, 200)
  t.equal((await viewer.call('GET', '/api/v3/listeners/')).status, 200)
  for (const [method, path, body] of [
    ['POST', '/api/v3/banned/', { who: 'x', as: 'client_id' }],
    ['PUT', `/api/v3/nodes/${node.node.name}/plugins/broker_plugin_template/load`, undefined],
    ['POST', '/api/v3/mqtt/publish', { topic: 'a', payload: 'x' }],
    ['DELETE', '/api/v3/users/admin', undefined]
  ] as const) {
    const answer = await viewer.call(method, path, body)
    t.equal(answer.status, 403, `${method} ${path}`)
    t.match(answer.body, { message: /forbidden/ })
  }
  t.same(((await management('GET', '/banned/')).body as { items: unknown[] }).items, [])
  t.equal((await management('PUT', '/users/watcher', { tags: 'administrator' })).status, 200)
  t.match((await viewer.call('GET', '/api/me')).body, { role: 'administrator' }, 'a role change applies at the next request')
  t.equal((await management('DELETE', '/users/watcher')).status, 200)
  t.equal((await viewer.call('GET', '/api/me')).status, 401, 'a removed user\'s session ends')
})

t.test('change one\'s own password, then log in with the new one', async (t) => {
  t.equal((await management('POST', '/users/', { username: 'operator', password: 'first-pw1', tags: '' })).status, 200)
  const client = await loggedIn('operator', 'first-pw1')
  const elsewhere = await loggedIn('operator', 'first-pw1')
  const change = async (old_password: string, new_password: string): Promise<{ status: number, body: unknown }> => {
    const { status, body } = await client.call('PUT', '/api/me/password', { old_password, new_password })
    return { status, body }
  }
  t.match(await change('first-pw1', 'short'), { status: 400, body: { message: /too short/ } })
  t.match(await change('first-pw1', 'first-pw1'), { status: 400, body: { message: /the old one/ } })
  t.match(await change('first-pw1', 'OPERATOR'), { status: 400, body: { message: /too short|user name/ } })
  t.match(await change('not-it', 'second-pw2'), { status: 400, body: { message: 'the old password is wrong' } })
  t.same(await change('first-pw1', 'second-pw2'), { status: 200, body: {} })
  t.equal((await client.call('GET', '/api/me')).status, 200, 'this session goes on')
  t.equal((await elsewhere.call('GET', '/api/me')).status, 401, 'the other sessions end')
  t.equal((await new ConsoleClient(base).login('operator', 'first-pw1')).status, 401)
  t.equal((await new ConsoleClient(base).login('operator', 'second-pw2')).status, 200)
  t.equal((await management('DELETE', '/users/operator')).status, 200)
})

t.test('logout ends the session on the server', async (t) => {
  const client = await loggedIn()
  const cookie = client.cookie
  const out = await client.call('POST', '/api/logout')
  t.equal(out.status, 204)
  t.match(out.headers.get('set-cookie'), /broker_dashboard_session=;.*Max-Age=0/)
  t.equal((await client.call('GET', '/api/me', undefined, { cookie })).status, 401, 'the old cookie no longer works')
  t.equal((await client.call('GET', '/api/v3/brokers/', undefined, { cookie })).status, 401)
})

t.test('samples grow; an unknown node is 404', async (t) => {
  const client = await loggedIn()
  const name = node.node.name
  const mqtt = await node.mqtt({ clientId: 'sampled' })
  await mqtt.subscribeAsync('sampled/#')
  let samples: Array<{ connections: number, subscriptions: number }> = []
  const deadline = Date.now() + 60_000
  while (!(samples.length >= 2 && samples[samples.length - 1].connections >= 1) && Date.now() < deadline) {
    const answer = await client.call('GET', `/api/dashboard/samples?node=${encodeURIComponent(name)}`)
    t.equal(answer.status, 200)
    t.equal((answer.body as { interval_s: number }).interval_s, 1)
    samples = (answer.body as { samples: typeof samples }).samples
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  t.ok(samples.length >= 2, 'samples a second apart')
  t.match(samples[samples.length - 1], { ts: Number, received_per_s: Number, sent_per_s: Number, connections: 1, subscriptions: 1 })
  t.same((await client.call('GET', '/api/dashboard/samples')).body, (await client.call('GET', `/api/dashboard/samples?node=${encodeURIComponent(name)}`)).body, 'this node by default')
  const unknown = await client.call('GET', '/api/dashboard/samples?node=nobody@nowhere')
  t.same([unknown.status, unknown.body], [404, { message: 'no node nobody@nowhere in the cluster' }])
  t.equal((await new ConsoleClient(base).call('GET', '/api/dashboard/samples')).status, 401)
})

t.test('the page and its assets; nothing outside them', async (t) => {
  const client = new ConsoleClient(base)
  for (const path of ['/', '/clients/c1']) {
    const page = await client.call('GET', path)
    t.equal(page.status, 200, path)
    t.match(page.headers.get('content-type'), /^text\/html/)
    t.match(page.headers.get('cache-control'), /no-cache/)
    t.match(page.headers.get('content-security-policy'), /default-src 'self'/)
    t.match(page.text, /<title>console<\/title>/)
  }
  const js = await client.call('GET', '/assets/app-1a2b.js')
  t.equal(js.status, 200)
  t.match(js.headers.get('content-type'), /javascript/)
  t.match(js.headers.get('cache-control'), /max-age=31536000/)
  t.equal(js.text, 'console.log("app")')
  const etag = js.headers.get('etag') ?? ''
  t.equal((await fetch(`${base}/assets/app-1a2b.js`, { headers: { 'if-none-match': etag } })).status, 304)
  t.match((await client.call('GET', '/assets/app-1a2b.css')).headers.get('content-type'), /^text\/css/)
  t.same([(await client.call('GET', '/api/nothing')).status, (await client.call('GET', '/api/nothing')).body], [404, { message: 'Not Found' }])
  // sent as written (fetch would normalize the dots away)
  for (const path of ['/assets/../../../package.json', '/assets/%2e%2e/%2e%2e/%2e%2e/package.json', '/assets/..%2F..%2F..%2Fpackage.json', '/assets/%2e%2e%5c%2e%2e%5cpackage.json', '/assets/.hidden', '/assets/nothing.js', '/assets/', '/assets/a%00b']) {
    const answer = await rawGet(base, path)
    // hapi resolves plain dots first: what is left is a page path (the console's page) or refused
    t.ok(answer.status === 404 || answer.status === 400 || (answer.status === 200 && answer.body.includes('<title>console</title>')), `${path}: ${answer.status}`)
    t.notMatch(answer.body, /"name"/, `${path}: nothing of the install`)
  }
})

t.test('HTTPS: the same console, its cookie Secure', async (t) => {
  const ca = await readFile(join(INSTALL_ROOT, 'etc/certs/cacert.pem'))
  const body = JSON.stringify({ username: 'admin', password: 'public' })
  const answer = await new Promise<{ status: number, cookie: string, text: string }>((resolve, reject) => {
    const req = httpsRequest({ host: 'localhost', port: httpsPort, path: '/api/login', method: 'POST', ca, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = ''
      res.setEncoding('utf8').on('data', (chunk: string) => { text += chunk }).on('end', () => resolve({ status: res.statusCode ?? 0, cookie: String(res.headers['set-cookie'] ?? ''), text }))
    })
    req.on('error', reject).end(body)
  })
  t.equal(answer.status, 200)
  t.match(answer.cookie, /; Secure/)
  t.match(answer.cookie, /; HttpOnly/)
})

t.test('unloaded at run time through the API it frees its ports; loaded again it serves', async (t) => {
  const path = `/nodes/${encodeURIComponent(node.node.name)}/plugins/broker_dashboard`
  t.equal((await management('PUT', `${path}/unload`)).status, 200)
  t.ok(await portRefuses(httpPort), 'http port closed')
  t.ok(await portRefuses(httpsPort), 'https port closed')
  const [{ listeners }] = (await management('GET', '/listeners/')).body as Array<{ listeners: Listener[] }>
  t.notOk(listeners.some((l) => l.protocol.endsWith(':dashboard')), 'no longer listed')
  t.equal((await management('PUT', `${path}/load`)).status, 200)
  t.equal((await new ConsoleClient(base).login('admin', 'public')).status, 200)
})

t.test('without broker_management the API answers 503 naming it; the page still loads', async (t) => {
  const client = await loggedIn()
  await node.node.plugins.unload('broker_management')
  t.teardown(async () => { if (!node.node.plugins.isActive('broker_management')) await node.node.plugins.load('broker_management') })
  for (const [method, path] of [['GET', '/api/me'], ['GET', '/api/v3/brokers/'], ['POST', '/api/login']] as const) {
    const answer = await client.call(method, path, method === 'POST' ? { username: 'admin', password: 'public' } : undefined)
    t.equal(answer.status, 503, path)
    t.match(answer.body, { message: /broker_management is not loaded/ })
  }
  t.equal((await client.call('GET', '/')).status, 200)
  await node.node.plugins.load('broker_management')
  t.equal((await client.call('GET', '/api/v3/brokers/')).status, 200, 'loaded again: the session works, the routes are the new load\'s')
})

t.test(`after ${LOGIN_RATE} failed logins a minute the address gets 429, the right password too`, async (t) => {
  const client = new ConsoleClient(base)
  let answer = await client.login('admin', 'wrong')
  for (let i = 0; i < LOGIN_RATE && answer.status === 401; i++) answer = await client.login('admin', 'wrong')
  t.equal(answer.status, 429)
  t.match(answer.body, { message: /too many failed logins/ })
  t.match(answer.headers.get('retry-after'), /^\d+$/)
  t.equal((await client.login('admin', 'public')).status, 429, 'nothing is checked')
})
