// Details of the SPEC that issue 15 found missing (#6–#13): configuration key
// names and labels (§2.14, §6), the management listener in the listeners API
// (§2.10), session record counters (§2.3), cookie authentication (§5.2.1),
// status codes (§7.1), plugin_configs reset and validation (§4.5), cluster
// listings with a dead node, PBKDF2 with MD4 (§5.2.8).
import { generateKeyPairSync } from 'node:crypto'
import { once } from 'node:events'
import { rm, writeFile } from 'node:fs/promises'
import { connect as tcpConnect, type Socket } from 'node:net'
import { join } from 'node:path'
import t from 'tap'
import { startApiNode } from '../plugins/broker_management/test/api.js'
import { md4 } from '../lib/plugin-kit/hash/md4.js'
import { pbkdf2Md4 } from '../lib/plugin-kit/hash/hash-worker.js'
import { hashPassword, parseHashSpec } from '../lib/plugin-kit/hash/password-hash.js'
import { freePort, startBroker, tempDir, type TestBroker } from './helpers/broker.js'
import { startCluster, waitFor } from './helpers/cluster.js'
import { connect, closeAll, nextMessages } from './helpers/mqtt.js'
import { connackCode } from './helpers/servers/outcome.js'
import { startRedis } from './helpers/servers/redis.js'

type Item = Record<string, unknown>

t.test('#6 config: mqtt.broker.sys_interval (alias broker.sys_interval), integer, duration; retainer.max_payload_size 1048576', async (t) => {
  // the old name given at start sets the new key; retainer.* are the broker_retainer plugin's (listed while it is loaded)
  const api = await startApiNode({ 'broker.sys_interval': '1h' }, {}, ['tcp'], { broker_retainer: {} })
  t.teardown(api.stop)
  const listing = async (): Promise<Item[]> => ((await api.call('GET', '/configs/')).body as Array<{ config: Item[] }>)[0].config
  const item = async (key: string): Promise<Item | undefined> => (await listing()).find((i) => i.key === key)

  t.same(await item('mqtt.broker.sys_interval'), { key: 'mqtt.broker.sys_interval', value: '1h', datatpye: 'integer, duration', app: 'broker', kind: 'live' })
  t.equal(await item('broker.sys_interval'), undefined, 'listed under the SPEC name only')
  t.same(await item('retainer.max_payload_size'), { key: 'retainer.max_payload_size', value: '1048576', datatpye: 'bytesize', app: 'broker_retainer', kind: 'live' })

  // the SPEC name changes it at run time: $SYS statistics come every second
  const local = await connect(api.mqttUrl, { clientId: 'sys-watcher' })
  t.teardown(async () => await closeAll(local))
  await local.subscribeAsync(`$SYS/brokers/${api.broker.node.name}/stats/connections/count`)
  t.equal((await api.call('PUT', '/configs/broker', { body: { key: 'mqtt.broker.sys_interval', value: '1s' } })).status, 200)
  t.equal((await item('mqtt.broker.sys_interval'))?.value, '1s')
  t.equal((await nextMessages(local, 2, 10_000)).length, 2, 'two $SYS statistics within 10 s')

  // and the alias too
  t.equal((await api.call('PUT', '/configs/broker', { body: { key: 'broker.sys_interval', value: '2h' } })).status, 200)
  t.equal((await item('mqtt.broker.sys_interval'))?.value, '2h')
})

t.test('#7 listeners: the management listener is listed (v3 http:management, v2 mqtt:api) with its connections', async (t) => {
  const api = await startApiNode({}, { 'management.listener.http.max_clients': 4 })
  t.teardown(api.stop)
  const node = api.broker.node.name
  const { port } = new URL(api.base)
  const management = async (): Promise<Item | undefined> =>
    ((await api.call('GET', `/nodes/${node}/listeners`)).body as Item[]).find((l) => l.protocol === 'http:management')

  t.match(await management(), { protocol: 'http:management', listen_on: `127.0.0.1:${port}`, acceptors: 2, max_conns: 4, shutdown_count: [] })
  const cluster = (await api.call('GET', '/listeners/')).body as Array<{ node: string, listeners: Item[] }>
  t.ok(cluster[0].listeners.some((l) => l.protocol === 'http:management'), 'in the cluster-wide listing too')
  const v2 = (await api.call('GET', `/../v2/monitoring/listeners/${node}`)).body as { result: Item[] }
  t.match(v2.result.find((l) => l.protocol === 'mqtt:api'), { listen: `127.0.0.1:${port}`, acceptors: 2, max_clients: 4, shutdown_count: [] })

  // idle connections are counted; over max_clients one is closed and counted as such
  const sockets: Socket[] = []
  t.teardown(() => { for (const s of sockets) s.destroy() })
  const before = (await management())!.current_conns as number
  for (let i = 0; i < 2; i++) {
    const socket = tcpConnect(Number(port), '127.0.0.1')
    sockets.push(socket)
    await once(socket, 'connect')
  }
  await waitFor(async () => (await management())?.current_conns === before + 2, 10_000, 'two more connections counted')
  for (let i = sockets.length + before; i < 5; i++) {
    const socket = tcpConnect(Number(port), '127.0.0.1')
    sockets.push(socket)
    await once(socket, 'connect')
  }
  const refused = sockets[sockets.length - 1]
  await once(refused, 'close')
  const after = await waitFor(async (): Promise<Item | false> => {
    const record = await management()
    return (record?.shutdown_count as { closed?: number }).closed === 1 && record !== undefined && record
  }, 10_000, 'the refused connection counted as closed')
  t.match(after, { shutdown_count: { closed: 1, kicked: 0 } })
})

t.test('#8 session records: deliver_msg, enqueue_msg, mailbox_len, heap_size counted', async (t) => {
  const api = await startApiNode({ 'zone.external.max_inflight': 1 })
  t.teardown(api.stop)
  const session = async (id: string): Promise<Item> => ((await api.call('GET', `/sessions/${id}`)).body as Item[])[0]

  // a subscriber that never acknowledges: one message in flight, the others held
  const received: string[] = []
  const slow = await connect(api.mqttUrl, { clientId: 'slow', protocolVersion: 5, customHandleAcks: (_topic, payload) => { received.push(payload.toString()) } })
  const publisher = await connect(api.mqttUrl, { clientId: 'pub' })
  t.teardown(async () => await closeAll(slow, publisher))
  await slow.subscribeAsync({ 'counted/#': { qos: 1 } })
  const idle = await session('slow')
  t.match(idle, { deliver_msg: 0, enqueue_msg: 0, mailbox_len: 0 })
  for (let i = 0; i < 3; i++) await publisher.publishAsync('counted/t', 'x'.repeat(10_000), { qos: 1 })
  await waitFor(() => received.length === 1, 10_000, 'the first message delivered')
  const busy = await waitFor(async (): Promise<Item | false> => {
    const record = await session('slow')
    return record.enqueue_msg === 2 && record
  }, 10_000, 'two messages held') as Item
  t.match(busy, { deliver_msg: 1, enqueue_msg: 2, mailbox_len: 2, inflight_len: 1 })
  t.ok((busy.heap_size as number) >= (idle.heap_size as number) + 30_000, `heap_size grows with the messages held (${String(idle.heap_size)} → ${String(busy.heap_size)})`)
  t.not(idle.heap_size, 0)
  const v2 = (await api.call('GET', '/../v2/sessions/slow')).body as { result: { objects: Item[] } }
  t.match(v2.result.objects[0], { deliver_msg: 1, enqueue_msg: 2 })
})

t.test('#8 an offline v5 session shows its own expiry interval and what was queued for it', async (t) => {
  const api = await startApiNode()
  t.teardown(api.stop)
  const sleeper = await connect(api.mqttUrl, { clientId: 'sleeper', protocolVersion: 5, clean: false, properties: { sessionExpiryInterval: 600 } })
  await sleeper.subscribeAsync({ 'nap/#': { qos: 1 } })
  await sleeper.endAsync()
  const publisher = await connect(api.mqttUrl, { clientId: 'pub' })
  t.teardown(async () => await closeAll(publisher))
  await publisher.publishAsync('nap/t', 'while away', { qos: 1 })
  const record = await waitFor(async (): Promise<Item | false> => {
    const r = ((await api.call('GET', '/sessions/sleeper')).body as Item[])[0]
    return r?.mqueue_len === 1 && r
  }, 10_000, 'the offline session with its queued message') as Item
  t.match(record, { created_at: 'undefined', expiry_interval: 600, enqueue_msg: 1, mailbox_len: 1 })
  t.ok((record.heap_size as number) > 0)
})

t.test('#8 after a restart the stored persistent sessions are counted in sessions/count and sessions/persistent/count', async (t) => {
  const dir = await tempDir()
  t.teardown(async () => await rm(dir, { recursive: true, force: true }))
  const port = await freePort()
  const start = async (): Promise<TestBroker> => await startBroker({}, ['tcp'], dir, { plugins: { broker_management: { 'management.listener.http': `127.0.0.1:${port}` } } })
  const http = async (path: string): Promise<unknown> => await (await fetch(`http://127.0.0.1:${port}/api/v3${path}`, { headers: { authorization: `Basic ${Buffer.from('admin:public').toString('base64')}` } })).json()

  const first = await start()
  for (const clientId of ['keep-1', 'keep-2']) {
    const client = await connect(`mqtt://127.0.0.1:${first.port()}`, { clientId, clean: false })
    await client.subscribeAsync({ 'kept/#': { qos: 1 } })
    await client.endAsync()
  }
  await first.stop()
  const second = await start()
  t.teardown(second.stop)
  const page = await http('/sessions/') as { meta: { count: number } }
  t.equal(page.meta.count, 2, 'both listed')
  const stats = await http(`/nodes/${second.node.name}/stats/`) as Record<string, number>
  t.match(stats, { 'sessions/count': 2, 'sessions/persistent/count': 2, 'connections/count': 0 })
})

t.test('#10 already_started / not_started answer with a status above 500 (§7.1); a wrong method 405 with Allow', async (t) => {
  const api = await startApiNode()
  t.teardown(api.stop)
  const node = api.broker.node.name
  const load = await api.call('PUT', `/nodes/${node}/plugins/broker_management/load`)
  t.ok(load.status > 500, `status ${load.status}`)
  t.same(load.body, { message: 'already_started' })
  const unload = await api.call('PUT', `/nodes/${node}/plugins/broker_plugin_template/unload`)
  t.ok(unload.status > 500, `status ${unload.status}`)
  t.same(unload.body, { message: 'not_started' })
  const v2 = await api.call('PUT', `/../v2/nodes/${node}/plugins/broker_management`, { body: { active: true } })
  t.ok(v2.status > 500)
  t.match(v2.body, { code: 110, message: 'already_started' })

  const post = await api.call('POST', '/brokers/')
  t.equal(post.status, 405)
  t.equal(post.headers.get('allow'), 'GET, HEAD')
  t.same(post.body, { message: 'method not allowed' })
  const del = await api.call('DELETE', '/apps/')
  t.equal(del.status, 405)
  t.equal(del.headers.get('allow'), 'GET, HEAD, POST')
  const v2Post = await api.call('POST', '/../v2/monitoring/nodes')
  t.equal(v2Post.status, 405)
  t.match(v2Post.body, { code: 102, message: 'method not allowed' })
  t.equal((await api.call('POST', '/no/such/path')).status, 404, 'an unknown path is still 404')
})

t.test('#13 MD4 (RFC 1320 test vectors) and PBKDF2-HMAC-MD4; an MQTT client checked with pbkdf2,md4 in Redis', async (t) => {
  // RFC 1320 §A.5
  const vectors: Array<[string, string]> = [
    ['', '31d6cfe0d16ae931b73c59d7e0c089c0'],
    ['a', 'bde52cb31de33e46245e05fbdbd6fb24'],
    ['abc', 'a448017aaf21d8525fc10ae87aa6729d'],
    ['message digest', 'd9130a8164549fe818874806e1c7014b'],
    ['abcdefghijklmnopqrstuvwxyz', 'd79e1c308aa5bbcdeea8ed63df412da9'],
    ['ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789', '043f8582f241db351ce627e153e7f0e4'],
    ['12345678901234567890123456789012345678901234567890123456789012345678901234567890', 'e33b4ddc9c38f2199c3e7b164fcc0536']
  ]
  for (const [input, digest] of vectors) t.equal(md4(Buffer.from(input)).toString('hex'), digest, `MD4("${input.slice(0, 20)}")`)
  // computed with `openssl kdf -kdfopt digest:MD4 … -provider legacy -provider default PBKDF2`
  t.equal((await pbkdf2Md4('pw', 's', 3, 16)).toString('hex'), '6e0d0dce486481ac920820d880d7b102')
  t.equal((await pbkdf2Md4('password', 'salt', 4096, 20)).toString('hex'), '3fe119f73e5297311b6597423ccb31677de28fd3')
  t.equal(await hashPassword(parseHashSpec('pbkdf2,md4,1000,20'), 'md4user-pw', 's4lt'), '7409d6f4d0c449d47bca8ddcba8ca99c5fdafbd3')

  const redis = await startRedis()
  t.teardown(async () => await redis.close())
  await redis.cli('HSET', 'mqtt_user:md4user', 'password', '7409d6f4d0c449d47bca8ddcba8ca99c5fdafbd3', 'salt', 's4lt')
  const broker = await startBroker({ 'mqtt.allow_anonymous': 'false' }, ['tcp'], undefined, {
    plugins: { broker_auth_redis: { 'auth.redis.server': `127.0.0.1:${redis.port}`, 'auth.redis.password_hash': 'pbkdf2,md4,1000,20', 'auth.redis.auth_cmd': 'HMGET mqtt_user:%u password salt' } }
  })
  t.teardown(broker.stop)
  t.equal(await connackCode(broker.port(), { username: 'md4user', password: 'md4user-pw' }), 0, 'right password')
  t.equal(await connackCode(broker.port(), { username: 'md4user', password: 'md4user-pX' }), 4, 'wrong password')
})

t.test('#11 plugin_configs: null resets a key to its default; a value the plugin would refuse at load is not saved', async (t) => {
  const api = await startApiNode({}, {}, ['tcp'], { broker_auth_jwt: { 'auth.jwt.secret': 'etc-secret', 'auth.jwt.from': 'username' } })
  t.teardown(api.stop)
  const node = api.broker.node.name
  const path = `/nodes/${node}/plugin_configs/broker_auth_jwt`
  const setting = async (key: string): Promise<unknown> => ((await api.call('GET', path)).body as Item[]).find((i) => i.key === key)?.value
  const active = async (): Promise<unknown> => ((await api.call('GET', `/nodes/${node}/plugins/`)).body as Item[]).find((p) => p.name === 'broker_auth_jwt')?.active

  // a key the operator's file sets goes back to the plugin's default
  t.equal(await setting('auth.jwt.from'), 'username')
  t.equal((await api.call('PUT', path, { body: { 'auth.jwt.from': null } })).status, 200)
  t.equal(await setting('auth.jwt.from'), 'password')

  // a key set at run time only is cleared
  const dir = await tempDir()
  t.teardown(async () => await rm(dir, { recursive: true, force: true }))
  const pem = join(dir, 'pub.pem')
  await writeFile(pem, generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ type: 'spki', format: 'pem' }))
  t.equal((await api.call('PUT', path, { body: { 'auth.jwt.pubkey': pem } })).status, 200)
  t.equal(await setting('auth.jwt.pubkey'), pem)
  t.equal((await api.call('PUT', path, { body: { 'auth.jwt.pubkey': null } })).status, 200)
  t.equal(await setting('auth.jwt.pubkey'), undefined, 'cleared')

  // a key with no default that the operator's file sets: refused, naming the file
  t.match(await api.call('PUT', path, { body: { 'auth.jwt.secret': null } }), { status: 400, body: { code: 108, message: /no default/ } })

  // a public key file that cannot be read: refused, not saved; the plugin stays loaded and loads again
  t.match(await api.call('PUT', path, { body: { 'auth.jwt.pubkey': join(dir, 'missing.pem') } }), { status: 400, body: { code: 108, message: /auth\.jwt\.pubkey: cannot read/ } })
  t.equal(await setting('auth.jwt.pubkey'), undefined)
  t.equal(await active(), true)
  t.equal((await api.call('PUT', `/nodes/${node}/plugins/broker_auth_jwt/unload`)).status, 200)
  t.equal((await api.call('PUT', `/nodes/${node}/plugins/broker_auth_jwt/load`)).status, 200, 'loads again')
})

t.test('#9 cookie authentication: POST /auth sets a session cookie that authenticates both APIs', async (t) => {
  const api = await startApiNode()
  t.teardown(api.stop)
  const root = api.base.replace(/\/api\/v3$/, '')
  const get = async (path: string, cookie?: string): Promise<Response> => await fetch(root + path, { headers: cookie === undefined ? {} : { cookie } })

  t.equal((await get('/api/v3/brokers/')).status, 401, 'no credentials: refused')
  const login = await fetch(`${root}/api/v2/auth`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: 'public' }) })
  t.equal(login.status, 200)
  const setCookie = login.headers.get('set-cookie') ?? ''
  t.match(setCookie, /^broker_session=[\w-]{43}; Path=\/api; Max-Age=1800; HttpOnly; SameSite=Strict$/)
  const cookie = setCookie.split(';')[0]

  const v3 = await get('/api/v3/brokers/', cookie)
  t.equal(v3.status, 200, 'v3 accepts the cookie')
  t.match(await v3.json(), [{ node: api.broker.node.name }])
  const v2 = await get('/api/v2/management/nodes', cookie)
  t.equal(v2.status, 200, 'v2 accepts the cookie')
  t.match(await v2.json(), { code: 0 })
  t.equal((await get('/api/v3/brokers/', 'broker_session=forged')).status, 401, 'a made-up cookie is refused')

  const wrong = await fetch(`${root}/api/v3/auth`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: 'nope' }) })
  t.equal(wrong.status, 400)
  t.equal(wrong.headers.get('set-cookie'), null, 'a failed login sets no cookie')

  // the session ends with its user
  t.equal((await api.call('POST', '/users/', { body: { username: 'ops', password: 'ops-pw', tags: 'user' } })).status, 200)
  const opsLogin = await fetch(`${root}/api/v3/auth`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'ops', password: 'ops-pw' }) })
  const opsCookie = (opsLogin.headers.get('set-cookie') ?? '').split(';')[0]
  t.equal((await get('/api/v3/nodes/', opsCookie)).status, 200)
  t.equal((await api.call('DELETE', '/users/ops')).status, 200)
  t.equal((await get('/api/v3/nodes/', opsCookie)).status, 401, 'refused once the user is removed')
})

t.test('#12 cluster-wide listings with a node that does not answer: the live nodes\' records and an error entry for it', async (t) => {
  const cluster = await startCluster({ size: 2, heartbeat: '500ms', rpcTimeout: '2s' })
  t.teardown(cluster.close)
  const [n1, n2] = cluster.nodes
  const one = await connect(n1.mqttUrl, { clientId: 'on-n1' })
  t.teardown(async () => await closeAll(one))
  await waitFor(async () => ((await cluster.api(n1, 'GET', '/connections/')).body as { items?: unknown[] }).items?.length === 1, 10_000, 'the client listed')

  cluster.freeze(n2)
  t.teardown(() => cluster.thaw(n2))
  const within = cluster.rpcTimeoutMs + 2000
  const started = Date.now()
  const [connections, listeners, brokers, v2Listeners] = await Promise.all([
    cluster.api(n1, 'GET', '/connections/', undefined, { timeoutMs: within }),
    cluster.api(n1, 'GET', '/listeners/', undefined, { timeoutMs: within }),
    cluster.api(n1, 'GET', '/brokers/', undefined, { timeoutMs: within }),
    cluster.apiV2(n1, 'GET', '/monitoring/listeners', undefined, { timeoutMs: within })
  ])
  t.ok(Date.now() - started < within, `answered within rpc_timeout + 2 s (${Date.now() - started} ms)`)
  const failed = { node: n2.name, error: 'badrpc', message: String }
  t.equal(connections.status, 200)
  t.match(connections.body, { items: [{ client_id: 'on-n1', node: n1.name }, failed], meta: { count: 2 } })
  t.equal(listeners.status, 200)
  t.match(listeners.body, [{ node: n1.name, listeners: Array }, failed])
  t.match(brokers.body, [{ node: n1.name, node_status: 'Running' }, failed])
  t.match(v2Listeners.body, { code: 0, result: { [n1.name]: Array, [n2.name]: { error: 'badrpc', message: String } } })
})
