// broker_dashboard's parts without a node: the shipped conf file and bad
// values, the samples' rates and bounds, the sessions' expiry and bound, the
// page when the console is not built.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import Hapi from '@hapi/hapi'
import t from 'tap'
import { INSTALL_ROOT, parseConfigText, readPluginConfigLines, validatePluginConfig } from '../../../lib/plugin-kit/testing.js'
import { SampleStore } from '../samples.js'
import { MAX_SESSIONS, Sessions, csrfMatches } from '../sessions.js'
import { schema, type DashboardConfig } from '../settings.js'
import { staticRoutes } from '../static-files.js'

const FILE = 'etc/plugins/broker_dashboard.conf'
const read = (text: string): DashboardConfig => validatePluginConfig(schema, parseConfigText(text, FILE), FILE)

t.test('the shipped conf file holds the defaults; its examples, uncommented, are valid', async (t) => {
  const file = join(INSTALL_ROOT, FILE)
  t.same(validatePluginConfig(schema, await readPluginConfigLines(file), file), {
    'dashboard.listener.http': '18083',
    'dashboard.listener.http.acceptors': 2,
    'dashboard.listener.http.max_clients': 512,
    'dashboard.listener.https.certfile': 'etc/certs/cert.pem',
    'dashboard.listener.https.keyfile': 'etc/certs/key.pem',
    'dashboard.listener.https.acceptors': 2,
    'dashboard.listener.https.max_clients': 512,
    'dashboard.docroot': 'plugins/broker_dashboard/ui/dist',
    'dashboard.sample_interval': 10_000,
    'dashboard.session_timeout': 1_800_000,
    'dashboard.password_min_length': 8
  })
  const examples = (await readFile(file, 'utf8')).replace(/^##\s+(dashboard\.\S+ = .*)$/gm, '$1')
  t.match(read(examples), { 'dashboard.listener.https': '18084', 'dashboard.listener.https.cacertfile': 'etc/certs/cacert.pem' })
})

t.test('bad values are refused with file:line and key', async (t) => {
  t.throws(() => read('dashboard.listener.http = 80800'), { message: /^etc\/plugins\/broker_dashboard\.conf:1: dashboard\.listener\.http: .*over 65535/ })
  t.throws(() => read('\ndashboard.listener.http = localhost'), { message: /:2: dashboard\.listener\.http: / })
  t.throws(() => read('dashboard.listener.https = x:y'), { message: /:1: dashboard\.listener\.https: / })
  t.throws(() => read('dashboard.listener.http.max_clients = 0'), { message: /:1: dashboard\.listener\.http\.max_clients: / })
  t.throws(() => read('dashboard.sample_interval = 500ms'), { message: /:1: dashboard\.sample_interval: .*shorter than 1000ms/ })
  t.throws(() => read('dashboard.sample_interval = 1h'), { message: /:1: dashboard\.sample_interval: .*longer than 10 minutes/ })
  t.throws(() => read('dashboard.sample_interval = often'), { message: /:1: dashboard\.sample_interval: / })
  t.throws(() => read('dashboard.session_timeout = 2d'), { message: /:1: dashboard\.session_timeout: .*longer than a day/ })
  t.throws(() => read('dashboard.password_min_length = 0'), { message: /:1: dashboard\.password_min_length: / })
  t.throws(() => read('dashboard.listen = 1'), { message: /:1: dashboard\.listen: unknown setting$/ })
  t.same(read('dashboard.listener.http = 127.0.0.1:8083\ndashboard.sample_interval = 2s'), { ...read(''), 'dashboard.listener.http': '127.0.0.1:8083', 'dashboard.sample_interval': 2000 })
})

t.test('samples: the first reading is the baseline, rates per second, the last hour kept', async (t) => {
  const store = new SampleStore(10_000)
  t.equal(store.capacity, 360)
  const reading = (ts: number, received: number, sent: number): { ts: number, received: number, sent: number, connections: number, subscriptions: number } => ({ ts, received, sent, connections: 3, subscriptions: 4 })
  store.add('a', reading(0, 100, 50))
  t.same(store.samples('a'), [])
  store.add('a', reading(10_000, 150, 70))
  t.same(store.samples('a'), [{ ts: 10_000, received_per_s: 5, sent_per_s: 2, connections: 3, subscriptions: 4 }])
  store.add('a', reading(20_000, 10, 80))
  t.match(store.samples('a')[1], { received_per_s: 0, sent_per_s: 1 }, 'a counter that went down (a restart) is no rate')
  for (let i = 3; i < 1000; i++) store.add('a', reading(i * 10_000, i, i))
  t.equal(store.samples('a').length, 360, 'bounded to an hour')
  t.equal(store.samples('a')[0].ts, 640 * 10_000, 'the oldest dropped')
  store.add('b', reading(0, 0, 0))
  store.keepOnly(['b'])
  t.same(store.samples('a'), [])
  store.forget('b')
  t.same(store.samples('b'), [])
})

t.test('sessions: idle expiry, CSRF check, at most MAX_SESSIONS', async (t) => {
  let now = 0
  const sessions = new Sessions(() => 1000, () => now)
  const a = sessions.open('admin')
  t.equal(sessions.touch(a.token), a)
  now = 999
  t.equal(sessions.touch(a.token), a, 'a request keeps it alive')
  now = 1998
  t.equal(sessions.touch(a.token), a)
  now = 2998
  t.equal(sessions.touch(a.token), undefined, 'idle too long')
  t.equal(sessions.touch(a.token), undefined, 'and gone')
  const b = sessions.open('admin')
  t.ok(csrfMatches(b, b.csrf))
  t.notOk(csrfMatches(b, undefined))
  t.notOk(csrfMatches(b, b.csrf.slice(1)))
  t.notOk(csrfMatches(b, a.csrf))
  const c = sessions.open('viewer')
  sessions.endOthers('admin', b.token)
  t.equal(sessions.touch(b.token), b)
  t.equal(sessions.touch(c.token), c)
  for (let i = 0; i < MAX_SESSIONS + 10; i++) sessions.open(`u${i}`)
  t.equal(sessions.size, MAX_SESSIONS)
  t.equal(sessions.touch(b.token), undefined, 'the least recently used went first')
})

t.test('without a build the page is a 503 that says to run npm run build', async (t) => {
  const server = Hapi.server()
  server.route(staticRoutes(join(INSTALL_ROOT, 'no-such-dist')))
  for (const url of ['/', '/clients']) {
    const res = await server.inject(url)
    t.equal(res.statusCode, 503, url)
    t.match(res.payload, /npm run build/)
    t.match(res.headers['content-security-policy'], /default-src 'self'/)
  }
  t.equal((await server.inject('/assets/app.js')).statusCode, 404)
})
