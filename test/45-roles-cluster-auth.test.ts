// Issue 14 #12 and #14: cluster RPC sealed with `cluster.cookie` (two nodes
// in this process on a real redis-server; forged, altered, stale and replayed
// messages PUBLISHed by a plain Redis client), and the management API's
// viewer role on every route of both route tables.
import { randomBytes, randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import t from 'tap'
import { ClusterRpc } from '../lib/cluster/rpc.js'
import { RpcSeal } from '../lib/cluster/rpc-seal.js'
import { createLogger } from '../lib/log.js'
import { startApiNode } from '../plugins/broker_management/test/api.js'
import { routes } from '../plugins/broker_management/routes.js'
import { routesV2 } from '../plugins/broker_management/routes-v2.js'
import type { Route } from '../plugins/broker_management/routes.js'
import { startBroker, type TestBroker } from './helpers/broker.js'
import { waitFor } from './helpers/cluster.js'
import { startRedis } from './helpers/servers/redis.js'

const redis = await startRedis()
t.teardown(async () => await redis.close())
const name = `sealed${process.pid}`
const cookie = randomBytes(24).toString('base64url')

async function node (nodeName: string, settings: Record<string, string> = {}): Promise<TestBroker> {
  return await startBroker({
    'node.name': nodeName,
    'cluster.discovery': 'redis',
    'cluster.name': name,
    'cluster.redis.server': `127.0.0.1:${redis.port}`,
    'cluster.heartbeat_interval': '300ms',
    'cluster.rpc_timeout': '10s',
    'cluster.cookie': cookie,
    ...settings
  })
}

/** A plain Redis client of the test (the attacker's view of the server). */
function redisClient (): Redis {
  const client = new Redis({ host: '127.0.0.1', port: redis.port, lazyConnect: false })
  client.on('error', () => {})
  return client
}

const a = await node('a@127.0.0.1')
const b = await node('b@127.0.0.1')
t.teardown(async () => { await a.stop(); await b.stop() })
const A = a.node.service
const B = b.node.service
await waitFor(async () => (await A.cluster.nodes()).length === 2 && (await B.cluster.nodes()).length === 2, 10_000, 'both nodes see each other')

const toB = `${name}:rpc:b@127.0.0.1`

t.test('a node with an empty cluster.cookie does not start in a cluster', async (t) => {
  await t.rejects(node('c@127.0.0.1', { 'cluster.cookie': '' }), /cluster\.cookie is empty/)
})

t.test('the cookie is never shown by the configuration listing', async (t) => {
  const items = await A.cluster.on('b@127.0.0.1', 'configs')
  t.match(items.find((i) => i.key === 'cluster.cookie'), { value: '******' })
  t.notOk(JSON.stringify(items).includes(cookie))
})

t.test('a raw PUBLISH of an unsigned, wrongly signed, altered, stale or replayed RPC has no effect; signed calls work', async (t) => {
  const spy = redisClient()
  t.teardown(() => spy.disconnect())
  await spy.subscribe(toB)
  const captured: string[] = []
  spy.on('message', (_channel: string, text: string) => captured.push(text))

  // a signed call between the nodes works (and the test's spy sees its message)
  await A.cluster.on('b@127.0.0.1', 'setConfig', 'broker', 'broker.sys_interval', '50s')
  t.equal(b.node.config.get('broker.sys_interval'), 50_000, 'signed setConfig applied on b')
  await waitFor(() => captured.length === 1, 5000, 'the signed request seen on the channel')
  B.setConfig('broker', 'broker.sys_interval', '20s')

  const forged = { id: randomUUID(), from: 'a@127.0.0.1', to: 'b@127.0.0.1', method: 'setConfig', args: ['broker', 'broker.sys_interval', '99s'] }
  const load = { ...forged, id: randomUUID(), method: 'loadPlugin', args: ['broker_plugin_template'] }
  const altered = JSON.parse(captured[0]) as { body: string, mac: string }
  altered.body = altered.body.replace('50s', '77s')
  const attempts: Array<[what: string, text: string]> = [
    ['unsigned setConfig', JSON.stringify(forged)],
    ['unsigned loadPlugin', JSON.stringify(load)],
    ['signed with another cookie', new RpcSeal('not-the-cookie', name).seal({ ...forged, id: randomUUID() })],
    ['signed for another cluster name', new RpcSeal(cookie, 'other').seal({ ...forged, id: randomUUID() })],
    ['altered after signing', JSON.stringify(altered)],
    ['stale (signed two minutes ago)', new RpcSeal(cookie, name, () => Date.now() - 120_000).seal({ ...forged, id: randomUUID() })],
    ['addressed to another node', new RpcSeal(cookie, name).seal({ ...forged, id: randomUUID(), to: 'a@127.0.0.1' })],
    ['replayed', captured[0]]
  ]
  const attacker = redisClient()
  t.teardown(() => attacker.disconnect())
  for (const [what, text] of attempts) t.equal(await attacker.publish(toB, text), 2, `${what}: delivered to b (and the spy)`)

  // b serves its channel in order: once a later signed call is answered, every forged message has been handled
  t.equal((await A.cluster.on('b@127.0.0.1', 'configs')).length > 0, true, 'a signed call after them is answered')
  t.equal(b.node.config.get('broker.sys_interval'), 20_000, 'the setting is unchanged')
  t.match((await B.plugins()).find((p) => p.name === 'broker_plugin_template'), { active: false }, 'the plugin is not loaded')
})

t.test('replies are sealed too: a forged, foreign or repeated reply is not taken', async (t) => {
  const pub = redisClient()
  const sub = redisClient()
  const fake = redisClient()
  t.teardown(async () => { pub.disconnect(); fake.disconnect(); await rpc.stop() })
  const rpc = new ClusterRpc(pub, sub, name, 'x@127.0.0.1', async () => 'local', 2000, createLogger('error', false), new RpcSeal(cookie, name))
  await rpc.start()
  // the test plays node y: every request gets forged replies first, then the genuine sealed one
  await fake.subscribe(`${name}:rpc:y@127.0.0.1`)
  const answer = redisClient()
  t.teardown(() => answer.disconnect())
  const seal = new RpcSeal(cookie, name)
  fake.on('message', (_channel: string, text: string) => {
    const opened = seal.open<{ id: string }>(text)
    if (!opened.ok) return
    const id = opened.message.id
    const replies = `${name}:rpc-reply:x@127.0.0.1`
    void (async () => {
      await answer.publish(replies, JSON.stringify({ id, ok: true, value: 'unsigned' }))
      await answer.publish(replies, new RpcSeal('not-the-cookie', name).seal({ id, from: 'y@127.0.0.1', to: 'x@127.0.0.1', ok: true, value: 'other cookie' }))
      await answer.publish(replies, seal.seal({ id, from: 'z@127.0.0.1', to: 'x@127.0.0.1', ok: true, value: 'from another node' }))
      await answer.publish(replies, seal.seal({ id, from: 'y@127.0.0.1', to: 'x@127.0.0.1', ok: true, value: 'genuine' }))
    })()
  })
  t.equal(await rpc.call('y@127.0.0.1', 'plugins', []), 'genuine')
})

t.test('an answer that comes before the PUBLISH of its request is acknowledged is taken, a refusal too (no unhandled rejection)', async (t) => {
  const pub = redisClient()
  const sub = redisClient()
  const node = redisClient()
  const answer = redisClient()
  t.teardown(async () => { pub.disconnect(); node.disconnect(); answer.disconnect(); await rpc.stop() })
  // Redis acknowledges this node's PUBLISH only after the answer is in (as on a loaded machine)
  const slowPub = { publish: async (channel: string, text: string): Promise<number> => {
    const listeners = await pub.publish(channel, text)
    await new Promise((resolve) => setTimeout(resolve, 300))
    return listeners
  } } as unknown as Redis
  const rpc = new ClusterRpc(slowPub, sub, name, 'x@127.0.0.1', async () => 'local', 5000, createLogger('error', false), new RpcSeal(cookie, name))
  await rpc.start()
  const seal = new RpcSeal(cookie, name)
  await node.subscribe(`${name}:rpc:y@127.0.0.1`)
  node.on('message', (_channel: string, text: string) => {
    const opened = seal.open<{ id: string, method: string }>(text)
    if (!opened.ok) return
    const { id, method } = opened.message
    const reply = method === 'kick'
      ? { id, from: 'y@127.0.0.1', to: 'x@127.0.0.1', ok: false, error: { kind: 'not_online', message: 'client nobody is not online' } }
      : { id, from: 'y@127.0.0.1', to: 'x@127.0.0.1', ok: true, value: 'answered' }
    void answer.publish(`${name}:rpc-reply:x@127.0.0.1`, seal.seal(reply))
  })
  const unhandled: unknown[] = []
  const onUnhandled = (reason: unknown): void => { unhandled.push(reason) }
  process.on('unhandledRejection', onUnhandled)
  t.teardown(() => { process.off('unhandledRejection', onUnhandled) })
  t.equal(await rpc.call('y@127.0.0.1', 'configs', []), 'answered', 'a value')
  await t.rejects(rpc.call('y@127.0.0.1', 'kick', ['nobody']), { message: 'client nobody is not online' }, 'a refusal, to the caller')
  await new Promise((resolve) => setImmediate(resolve))
  t.same(unhandled, [], 'nothing was left unhandled (the node would have stopped)')
})

t.test('viewer role: reads only, on every route of both APIs; no other application\'s secret', async (t) => {
  const api = await startApiNode({ 'node.name': 'roles@127.0.0.1' })
  t.teardown(api.stop)
  const v2 = async (method: string, path: string, auth: string, body?: unknown): Promise<{ status: number, body: unknown }> => {
    const res = await fetch(api.base.replace('/api/v3', '/api/v2') + path, {
      method,
      headers: { authorization: `Basic ${Buffer.from(auth).toString('base64')}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body)
    })
    const text = await res.text()
    return { status: res.status, body: text === '' ? text : JSON.parse(text) as unknown }
  }

  // a viewer application (v3) and a viewer user (v2, tag `viewer`), made by the default administrator
  const made = await api.call('POST', '/apps/', { body: { app_id: 'watcher', name: 'Watcher', role: 'viewer' } })
  t.equal(made.status, 200, JSON.stringify(made.body))
  const watcher = `watcher:${(made.body as { secret: string }).secret}`
  const other = await api.call('POST', '/apps/', { body: { app_id: 'deployer', name: 'Deployer' } })
  const deployerSecret = (other.body as { secret: string }).secret
  t.equal((await v2('POST', '/users', 'admin:public', { username: 'eve', password: 'eve-pw', tags: 'viewer' })).status, 200)
  const eve = 'eve:eve-pw'

  const concrete = (route: Route): string => route.path.replace(/:(\w+)/g, (_m, name: string) => name === 'node' ? 'roles@127.0.0.1' : 'x')
  const tables: Array<[api: string, rows: readonly Route[], call: (route: Route) => Promise<{ status: number, body: unknown }>]> = [
    ['v3', routes, async (route) => await api.call(route.method, concrete(route), { auth: watcher, ...(route.method === 'GET' || route.method === 'DELETE' ? {} : { body: {} }) })],
    ['v2', routesV2, async (route) => await v2(route.method, concrete(route), eve, route.method === 'GET' || route.method === 'DELETE' ? undefined : {})]
  ]
  for (const [name, rows, call] of tables) {
    for (const route of rows) {
      if (route.auth === false) continue
      const what = `${name} ${route.method} ${route.path}`
      const answer = await call(route)
      if (route.method !== 'GET') {
        t.equal(route.role, 'administrator', `${what} needs the administrator role`)
        t.equal(answer.status, 403, `${what}: a viewer is refused`)
        t.match(answer.body, name === 'v3' ? { message: /forbidden/ } : { code: 102, result: [], message: /forbidden/ }, `${what}: the refusal body`)
      } else if (route.role === 'viewer') {
        t.not(answer.status, 403, `${what}: a viewer may read`)
        t.not(answer.status, 401, `${what}: the viewer's credentials are good`)
      } else {
        t.equal(answer.status, 403, `${what}: administrators only`)
      }
    }
  }

  // nothing the viewer asked for happened
  t.equal((await api.call('GET', '/apps/deployer')).status, 200, 'the deployer app is still there')
  t.match((await v2('GET', '/users', 'admin:public')).body, { code: 0, result: [{ username: 'admin' }, { username: 'eve', tags: 'viewer' }] })

  // secrets are kept hashed and shown only at creation: no lookup or listing shows one, whoever asks
  const seenByViewer = await api.call('GET', '/apps/deployer', { auth: watcher })
  t.equal(seenByViewer.status, 200)
  t.notOk(JSON.stringify(seenByViewer.body).includes(deployerSecret), 'the viewer does not see the deployer\'s secret')
  t.match(seenByViewer.body, { app_id: 'deployer', role: 'administrator' })
  const own = (await api.call('GET', '/apps/watcher', { auth: watcher })).body as Record<string, unknown>
  t.match(own, { app_id: 'watcher', role: 'viewer' })
  t.notOk('secret' in own, 'not even its own secret')
  t.notOk('secret' in ((await api.call('GET', '/apps/deployer')).body as Record<string, unknown>), 'an administrator sees no secret either')
  const listed = (await api.call('GET', '/apps/', { auth: watcher })).body as Array<Record<string, unknown>>
  t.notOk(listed.some((app) => 'secret' in app), 'no secret in the listing')
  t.match(listed.find((app) => app.app_id === 'watcher'), { role: 'viewer' })

  // an administrator turns the viewer into an administrator (v3) and back; the role takes effect at once
  t.equal((await api.call('PUT', '/apps/watcher', { body: { role: 'administrator' } })).status, 200)
  t.equal((await api.call('PUT', '/configs/broker', { auth: watcher, body: { key: 'broker.sys_interval', value: '40s' } })).status, 200, 'now an administrator')
  t.equal((await api.call('PUT', '/apps/watcher', { body: { role: 'viewer' } })).status, 200)
  t.equal((await api.call('PUT', '/configs/broker', { auth: watcher, body: { key: 'broker.sys_interval', value: '41s' } })).status, 403, 'a viewer again')
  t.equal((await api.call('POST', '/apps/', { body: { app_id: 'bad', name: 'Bad', role: 'root' } })).status, 400, 'an unknown role is refused')
})
