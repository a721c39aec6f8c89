// broker_dashboard over plain HTTP against a real node (with
// broker_management): login, the session cookie and CSRF gate, /api/me,
// logout, the v3 API forwarded, roles, the samples, the static files.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { startPluginNode, type PluginNode } from '../../../lib/plugin-kit/testing.js'
import { ConsoleClient } from './console-client.js'

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

interface Listener { protocol: string, listen_on: string }

let node: PluginNode
let base: string
let docroot: string

t.before(async () => {
  docroot = await mkdtemp(join(tmpdir(), 'dashboard-dist-'))
  await mkdir(join(docroot, 'assets'))
  await writeFile(join(docroot, 'index.html'), '<!doctype html><title>console</title><script src="/assets/app-1a2b.js"></script>')
  await writeFile(join(docroot, 'assets', 'app-1a2b.js'), 'console.log("app")')
  await writeFile(join(docroot, 'assets', 'app-1a2b.css'), 'body{}')
  node = await startPluginNode({
    plugin: 'broker_dashboard',
    settings: { 'dashboard.listener.http': '127.0.0.1:0', 'dashboard.docroot': docroot, 'dashboard.sample_interval': '1s' },
    withApi: true
  })
  const [{ listeners }] = (await node.http('GET', '/listeners/')).body as Array<{ listeners: Listener[] }>
  const dashboard = listeners.find((l) => l.protocol === 'http:dashboard')
  base = `http://${dashboard?.listen_on ?? 'missing'}`
})
t.teardown(async () => {
  await node?.stop()
  await rm(docroot, { recursive: true, force: true })
})

t.test('login answers the user, role and CSRF token with an HttpOnly SameSite=Strict cookie', async (t) => {
  const client = new ConsoleClient(base)
  const answer = await client.login('admin', 'public')
  t.equal(answer.status, 200)
  t.match(answer.body, { username: 'admin', role: 'administrator', csrf_token: /^[\w-]{20,}$/ })
  const cookie = answer.headers.get('set-cookie') ?? ''
  t.match(cookie, /^broker_dashboard_session=[\w-]+;/)
  t.match(cookie, /HttpOnly/)
  t.match(cookie, /SameSite=Strict/)
  t.match(cookie, /Path=\//)
  t.notMatch(cookie, /Secure/, 'not Secure over plain HTTP')
  const me = await client.call('GET', '/api/me')
  t.same(me.body, answer.body)
})

t.test('a wrong password is 401 and sets no cookie', async (t) => {
  const client = new ConsoleClient(base)
  const answer = await client.login('admin', 'wrong')
  t.equal(answer.status, 401)
  t.match(answer.body, { message: String })
  t.equal(answer.headers.get('set-cookie'), null)
  t.equal((await client.call('GET', '/api/me')).status, 401)
})

t.test('the v3 API through the session equals the management listener', async (t) => {
  const client = new ConsoleClient(base)
  await client.login('admin', 'public')
  const viaDashboard = await client.call('GET', '/api/v3/nodes/')
  const viaApi = await node.http('GET', '/nodes/')
  t.equal(viaDashboard.status, 200)
  t.same((viaDashboard.body as Array<{ node: string }>).map((n) => n.node), (viaApi.body as Array<{ node: string }>).map((n) => n.node))
  const plugins = await client.call('GET', '/api/v3/plugins/')
  t.same(plugins.body, (await node.http('GET', '/plugins/')).body)
  const unknown = await client.call('GET', '/api/v3/no/such/route')
  t.same([unknown.status, unknown.body], [404, { message: 'not found' }])
  const anonymous = await new ConsoleClient(base).call('GET', '/api/v3/nodes/')
  t.equal(anonymous.status, 401)
  t.equal(anonymous.headers.get('www-authenticate'), null, 'no Basic challenge: the browser must not ask')
})

t.test('samples grow; an unknown node is 404', async (t) => {
  const client = new ConsoleClient(base)
  await client.login('admin', 'public')
  const name = node.node.name
  let samples: unknown[] = []
  const deadline = Date.now() + 30_000
  while (samples.length < 2 && Date.now() < deadline) {
    const answer = await client.call('GET', `/api/dashboard/samples?node=${encodeURIComponent(name)}`)
    t.equal(answer.status, 200)
    samples = (answer.body as { samples: unknown[] }).samples
    if (samples.length < 2) await new Promise((resolve) => setTimeout(resolve, 250))
  }
  t.ok(samples.length >= 2, 'two samples a second apart')
  t.match(samples[0], { ts: Number, received_per_s: Number, sent_per_s: Number, connections: Number, subscriptions: Number })
  const unknown = await client.call('GET', '/api/dashboard/samples?node=nobody@nowhere')
  t.equal(unknown.status, 404)
  t.match(unknown.body, { message: String })
})

t.test('static files', async (t) => {
  const client = new ConsoleClient(base)
  const page = await client.call('GET', '/')
  t.equal(page.status, 200)
  t.match(page.headers.get('content-type'), /^text\/html/)
  t.match(page.text, /<title>console<\/title>/)
  const js = await client.call('GET', '/assets/app-1a2b.js')
  t.equal(js.status, 200)
  t.match(js.headers.get('content-type'), /javascript/)
  t.match(js.headers.get('cache-control'), /max-age=31536000/)
  const css = await client.call('GET', '/assets/app-1a2b.css')
  t.match(css.headers.get('content-type'), /^text\/css/)
  // sent as written (fetch would normalize the dots away)
  for (const path of ['/assets/../../../package.json', '/assets/%2e%2e/%2e%2e/%2e%2e/package.json', '/assets/..%2F..%2F..%2Fpackage.json', '/assets/.hidden', '/assets/nothing.js', '/assets/']) {
    const answer = await rawGet(base, path)
    // hapi resolves plain dots first: what is left is a page path (the console's page) or refused
    t.ok(answer.status === 404 || (answer.status === 200 && answer.body.includes('<title>console</title>')), `${path}: ${answer.status}`)
    t.notMatch(answer.body, /"name"/, `${path}: nothing of the install`)
  }
})
