// broker_lwm2m end to end: LwM2M devices written on the npm `coap` package
// (device.ts) register with the gateway of a real node, MQTT.js clients
// send commands on their command topics and read the answers,
// notifications and registrations. One node for the file: the auth chain is
// broker_auth_http (an endpoint name starting with `bad` is refused), the
// ACL a file.
import t from 'tap'
import { createServer, type Server as HttpServer } from 'node:http'
import { createSocket } from 'node:dgram'
import { once } from 'node:events'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { generate } from 'coap-packet'
import { startPluginNode, type MqttClient, type PluginNode } from '../../../lib/plugin-kit/testing.js'
import { Lwm2mDevice } from './device.js'

const DEADLINE_MS = 15_000

let node: PluginNode
let gatewayPort = 0
let dir = ''
let auth: HttpServer
let app: MqttClient
const devices: Lwm2mDevice[] = []
/** every message the app client received, in order */
const seen: Array<{ topic: string, json: Record<string, unknown> }> = []
const waiters: Array<() => void> = []

async function nextMessage (match: (m: { topic: string, json: Record<string, unknown> }) => boolean, what: string, from = 0): Promise<{ topic: string, json: Record<string, unknown> }> {
  const deadline = Date.now() + DEADLINE_MS
  for (;;) {
    const found = seen.slice(from).find(match)
    if (found !== undefined) return found
    const left = deadline - Date.now()
    if (left <= 0) throw new Error(`${what}: not within ${DEADLINE_MS} ms; seen ${JSON.stringify(seen.slice(from)).slice(0, 1500)}`)
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, left)
      waiters.push(() => { clearTimeout(timer); resolve() })
    })
  }
}

async function until (check: () => Promise<boolean> | boolean, what: string): Promise<void> {
  const deadline = Date.now() + DEADLINE_MS
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${DEADLINE_MS} ms`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

async function device (ep: string): Promise<Lwm2mDevice> {
  const d = await Lwm2mDevice.start(ep, gatewayPort)
  devices.push(d)
  return d
}

let nextReq = 1
/** Publishes a command on `ep`'s command topic; resolves with its answer on the response topic. */
async function command (ep: string, msgType: string, data: Record<string, unknown>): Promise<Record<string, unknown>> {
  const reqID = nextReq++
  const from = seen.length
  await app.publishAsync(`lwm2m/${ep}/dn`, JSON.stringify({ reqID, msgType, data }), { qos: 1 })
  const answer = await nextMessage((m) => m.topic === `lwm2m/${ep}/up/resp` && m.json.reqID === reqID, `the answer to ${msgType} ${JSON.stringify(data)}`, from)
  return answer.json
}

async function metric (key: string): Promise<number> {
  const { body } = await node.http('GET', `/nodes/${node.node.name}/metrics/`)
  return (body as Record<string, number>)[key] ?? 0
}

async function connection (clientId: string): Promise<Record<string, unknown> | undefined> {
  const { body } = await node.http('GET', `/connections/${encodeURIComponent(clientId)}`)
  return (body as { data?: Array<Record<string, unknown>> }).data?.[0] ?? (body as Array<Record<string, unknown>>)[0]
}

t.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'broker-lwm2m-'))
  const acl = join(dir, 'acl.conf')
  await writeFile(acl, [
    '{deny, {client, "acl-sub"}, subscribe, ["lwm2m/acl-sub/dn/#"]}.',
    '{deny, {client, "acl-pub"}, publish, ["lwm2m/acl-pub/up/resp"]}.',
    '{allow, all}.'
  ].join('\n'))
  // the auth chain: an HTTP service refusing client ids that start with "bad"
  auth = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk: Buffer) => { body += chunk.toString() })
    req.on('end', () => {
      const clientId = new URLSearchParams(body).get('clientid') ?? ''
      res.statusCode = req.url?.startsWith('/auth') === true && !clientId.startsWith('bad') ? 200 : 401
      res.end(res.statusCode === 200 ? 'allow' : 'deny')
    })
  })
  auth.listen(0, '127.0.0.1')
  await once(auth, 'listening')
  const base = `http://127.0.0.1:${(auth.address() as { port: number }).port}`
  node = await startPluginNode({
    plugin: 'broker_lwm2m',
    // a device's answer may take seconds on a loaded CI machine; the mute device's 5.04 still comes well within DEADLINE_MS
    settings: { 'lwm2m.port': '127.0.0.1:0', 'lwm2m.qmode_time_window': '0', 'lwm2m.command_timeout': '8s' },
    node: { 'mqtt.allow_anonymous': 'false', 'mqtt.acl_file': acl },
    // broker_modules: the $SYS presence notices, as on a new install
    others: { broker_modules: {}, broker_auth_http: { 'auth.http.auth_req': `${base}/auth`, 'auth.http.super_req': `${base}/superuser`, 'auth.http.acl_req': '', 'auth.http.request.retry_times': 0 } },
    withApi: true
  })
  const { body } = await node.http('GET', `/nodes/${node.node.name}/listeners`)
  const listener = (body as Array<{ protocol: string, listen_on: string }>).find((l) => l.protocol === 'lwm2m:udp')
  gatewayPort = Number(listener!.listen_on.split(':')[1])
  app = await node.mqtt({ clientId: 'app' })
  app.on('message', (topic, payload) => {
    let json: Record<string, unknown>
    try {
      json = JSON.parse(payload.toString()) as Record<string, unknown>
    } catch {
      json = { raw: payload.toString() }
    }
    seen.push({ topic, json })
    for (const wake of waiters.splice(0)) wake()
  })
  await app.subscribeAsync(['lwm2m/+/up/#', '$SYS/brokers/+/clients/+/connected'], { qos: 1 })
})

t.teardown(async () => {
  await Promise.all(devices.map(async (d) => await d.close()))
  await node.stop()
  auth.close()
  await rm(dir, { recursive: true, force: true })
})

t.test('register: 2.01 with a location, announced on the register topic, a listed LwM2M client', async (t) => {
  const dev = await device('dev1')
  const from = seen.length
  const answer = await dev.register({ lt: 60 })
  t.equal(answer.code, '2.01')
  t.equal(answer.location[0], 'rd')
  t.match(answer.location[1], /^[\w-]{4,}$/)
  const announced = await nextMessage((m) => m.topic === 'lwm2m/dev1/up/resp' && m.json.msgType === 'register', 'the register message', from)
  t.same(announced.json.data, { ep: 'dev1', lt: 60, lwm2m: '1.0', b: 'U', alternatePath: '/', objectList: ['/1/0', '/3/0', '/4/0', '/6/0'] })
  const listed = await connection('dev1')
  t.match(listed, { client_id: 'dev1', proto_name: 'LwM2M', proto_ver: '1.0', ipaddress: '127.0.0.1', port: dev.port, keepalive: 60 })
  const presence = await nextMessage((m) => m.topic.endsWith('/clients/dev1/connected'), 'the $SYS presence notice', from)
  t.match(presence.json, { clientid: 'dev1', proto_name: 'LwM2M', ipaddress: '127.0.0.1', connack: 0 }, 'announced on $SYS as an LwM2M client')
  const { body } = await node.http('GET', `/nodes/${node.node.name}/listeners`)
  t.match((body as Array<Record<string, unknown>>).find((l) => l.protocol === 'lwm2m:udp'), { listen_on: `127.0.0.1:${gatewayPort}`, current_conns: 1 })
})

t.test('read in each content format: text, opaque, TLV, LwM2M JSON', async (t) => {
  t.match(await command('dev1', 'read', { path: '/3/0/0' }), { msgType: 'read', data: { code: '2.05', codeMsg: 'content', reqPath: '/3/0/0', content: [{ path: '/3/0/0', value: 'Open Mobile Alliance' }] } })
  t.match(await command('dev1', 'read', { path: '/6/0/4' }), { data: { code: '2.05', content: [{ path: '/6/0/4', value: Buffer.from([1, 2, 0xfe]).toString('base64') }] } })
  const tlv = await command('dev1', 'read', { path: '/3/0' })
  const content = (tlv.data as { content: Array<{ path: string, value: unknown }> }).content
  t.same(Object.fromEntries(content.map((e) => [e.path, e.value])), {
    '/3/0/0': 'Open Mobile Alliance',
    '/3/0/1': 'Lightweight M2M Client',
    '/3/0/2': '345000123',
    '/3/0/3': '1.0',
    '/3/0/6/0': 1,
    '/3/0/6/1': 5,
    '/3/0/7/0': 3800,
    '/3/0/7/1': 5000,
    '/3/0/9': 100,
    '/3/0/13': 1367491215,
    '/3/0/14': '+02:00',
    '/3/0/16': 'U'
  }, 'a TLV instance with multiple resources, each value typed by the object definition')
  const json = await command('dev1', 'read', { path: '/4/0' })
  t.same((json.data as { content: unknown[] }).content, [{ path: '/4/0/0', value: 0 }, { path: '/4/0/2', value: -61 }, { path: '/4/0/4/0', value: '10.0.0.7' }])
  t.match(await command('dev1', 'read', { path: '/3/0/99' }), { data: { code: '4.04', codeMsg: 'not_found', reqPath: '/3/0/99' } })
})

t.test('discover, write (single and batch), write-attr, execute, create, delete', async (t) => {
  const dev = devices.find((d) => d.ep === 'dev1')!
  const discover = await command('dev1', 'discover', { path: '/3/0' })
  t.match(discover, { msgType: 'discover', data: { code: '2.05', reqPath: '/3/0' } })
  t.equal((discover.data as { content: string[] }).content[0], '</3/0>')
  t.ok((discover.data as { content: string[] }).content.includes('</3/0/6>'))
  t.equal(dev.received.at(-1)?.method, 'GET')

  t.match(await command('dev1', 'write', { path: '/3/0/14', type: 'String', value: '+05:00' }), { msgType: 'write', data: { code: '2.04', codeMsg: 'changed', reqPath: '/3/0/14' } })
  t.equal(dev.values.get('/3/0/14'), '+05:00')
  t.match(dev.received.at(-1), { method: 'PUT', path: '/3/0/14', format: 'application/vnd.oma.lwm2m+tlv' })
  t.match(await command('dev1', 'write', { basePath: '/3/0', content: [{ path: '/13', type: 'Time', value: 1500000000 }, { path: '/15', value: 'Europe/Paris' }] }), { data: { code: '2.04', reqPath: '/3/0' } })
  t.equal(dev.values.get('/3/0/13'), 1500000000)
  t.equal(dev.values.get('/3/0/15'), 'Europe/Paris', 'the type comes from the object definition when the command leaves it out')
  t.match(dev.received.at(-1), { method: 'POST', path: '/3/0' })

  t.match(await command('dev1', 'write-attr', { path: '/3/0/9', pmin: 1, pmax: '5' }), { msgType: 'write-attr', data: { code: '2.04' } })
  t.match(dev.received.at(-1), { method: 'PUT', path: '/3/0/9', query: ['pmin=1', 'pmax=5'] })

  t.match(await command('dev1', 'execute', { path: '/3/0/4' }), { msgType: 'execute', data: { code: '2.04', reqPath: '/3/0/4' } })
  t.match(dev.received.at(-1), { method: 'POST', path: '/3/0/4' })
  t.equal(dev.received.at(-1)?.payload.length, 0)
  t.match(await command('dev1', 'execute', { path: '/1/0/8', args: "0='now'" }), { data: { code: '2.04' } })
  t.equal(dev.received.at(-1)?.payload.toString(), "0='now'")

  t.match(await command('dev1', 'create', { basePath: '/6', content: [{ path: '/1/0', value: 1.5 }] }), { msgType: 'create', data: { code: '2.01' } })
  t.equal(dev.values.get('/6/1/0'), 1.5)
  t.match(await command('dev1', 'delete', { path: '/6/1' }), { msgType: 'delete', data: { code: '2.02' } })
  t.notOk(dev.values.has('/6/1/0'))
})

t.test('commands the gateway refuses are answered 4.00 with the reason and counted', async (t) => {
  const before = await metric('lwm2m/commands/refused')
  t.match(await command('dev1', 'read', { path: '/3/x' }), { data: { code: '4.00', codeMsg: 'bad_request', reason: /not an LwM2M path/ } })
  t.match(await command('dev1', 'write', { path: '/3/0/9', value: 'lots' }), { data: { code: '4.00', reason: /not an integer/ } })
  t.match(await command('dev1', 'write', { path: '/3/0/9', type: 'String', value: 'x' }), { data: { code: '4.00', reason: /of type Integer/ } })
  t.match(await command('dev1', 'reboot', { path: '/3/0/4' }), { msgType: 'unknown', data: { code: '4.00', reason: /msgType "reboot"/ } })
  const from = seen.length
  await app.publishAsync('lwm2m/dev1/dn', '{not json', { qos: 1 })
  t.match((await nextMessage((m) => m.topic === 'lwm2m/dev1/up/resp', 'the refusal', from)).json, { reqID: null, data: { code: '4.00', reason: 'the command is not JSON' } })
  t.equal(await metric('lwm2m/commands/refused'), before + 5)
})

t.test('observe: the first value on the response topic, notifications on the notify topic, cancel-observe', async (t) => {
  const dev = devices.find((d) => d.ep === 'dev1')!
  t.match(await command('dev1', 'observe', { path: '/3/0/9' }), { msgType: 'observe', data: { code: '2.05', content: [{ path: '/3/0/9', value: 100 }] } })
  t.ok(dev.observers.has('/3/0/9'))
  const reqID = nextReq - 1
  for (const level of [99, 98]) {
    const from = seen.length
    dev.values.set('/3/0/9', level)
    dev.notify('/3/0/9')
    const notification = await nextMessage((m) => m.topic === 'lwm2m/dev1/up/notify', `the notification of ${level}`, from)
    t.match(notification.json, { reqID, msgType: 'notify', data: { code: '2.05', reqPath: '/3/0/9', content: [{ path: '/3/0/9', value: level }] } })
    t.type(notification.json.seqNum, 'number')
  }
  // a TLV notification of an instance
  t.match(await command('dev1', 'observe', { path: '/4/0' }), { data: { code: '2.05' } })
  const from = seen.length
  dev.values.set('/4/0/2', -70)
  dev.notify('/4/0')
  t.match((await nextMessage((m) => m.topic === 'lwm2m/dev1/up/notify', 'the JSON notification', from)).json, { data: { content: [{ path: '/4/0/0' }, { path: '/4/0/2', value: -70 }] } })
  t.match(await command('dev1', 'cancel-observe', { path: '/3/0/9' }), { msgType: 'cancel-observe', data: { code: '2.05' } })
  t.match(dev.received.at(-1), { method: 'GET', path: '/3/0/9' })
  await until(() => !dev.observers.has('/3/0/9'), 'the device drops the observation')
  t.ok(await metric('lwm2m/notifications') >= 3)
})

t.test('lwm2m.auto_observe (live): every object instance of a Register is observed, its notifications published', async (t) => {
  const path = `/nodes/${node.node.name}/plugin_configs/broker_lwm2m`
  const bad = await node.http('PUT', path, { 'lwm2m.qmode_time_window': 'soon' })
  t.equal(bad.status, 400)
  t.match(JSON.stringify(bad.body), /broker_lwm2m\.conf:\d+: lwm2m\.qmode_time_window: /, 'a bad value refused with file:line')
  t.equal((await node.http('PUT', path, { 'lwm2m.auto_observe': 'on' })).status, 200)
  const dev = await device('dev-watched')
  const from = seen.length
  t.equal((await dev.register()).code, '2.01')
  await until(() => dev.observers.size === 4, 'the device observed on each instance')
  t.same([...dev.observers.keys()].sort(), ['/1/0', '/3/0', '/4/0', '/6/0'])
  await nextMessage((m) => m.topic === 'lwm2m/dev-watched/up/resp' && m.json.msgType === 'observe' && (m.json.data as { reqPath?: string }).reqPath === '/3/0', 'the auto-observe answer', from)
  dev.values.set('/3/0/9', 42)
  dev.notify('/3/0')
  const notification = await nextMessage((m) => m.topic === 'lwm2m/dev-watched/up/notify', 'the notification', from)
  t.ok((notification.json.data as { content: Array<{ path: string, value: unknown }> }).content.some((e) => e.path === '/3/0/9' && e.value === 42))
  t.equal((await node.http('PUT', path, { 'lwm2m.auto_observe': null, 'lwm2m.qmode_time_window': '0' })).status, 200)
})

t.test('update: 2.04, the new lifetime and objects announced; an unknown location is 4.04', async (t) => {
  const dev = devices.find((d) => d.ep === 'dev1')!
  const from = seen.length
  t.equal((await dev.update('lt=120', Buffer.from('</1/0>,</3/0>,</5/0>'))).code, '2.04')
  const announced = await nextMessage((m) => m.topic === 'lwm2m/dev1/up/resp' && m.json.msgType === 'update', 'the update message', from)
  t.match(announced.json.data, { ep: 'dev1', lt: 120, objectList: ['/1/0', '/3/0', '/5/0'] })
  t.equal((await dev.send('POST', '/rd/nowhere', 'lt=60')).code, '4.04')
  t.equal((await dev.update('lt=0')).code, '4.00', 'a lifetime under lwm2m.lifetime_min')
  t.equal((await dev.update('b=X')).code, '4.00')
})

t.test('register refusals: a bad endpoint name, lifetime or version', async (t) => {
  const dev = await device('dev+1')
  t.equal((await dev.register()).code, '4.00')
  const dev2 = await device('dev2')
  t.equal((await dev2.register({ lt: 100_000 })).code, '4.00', 'over lwm2m.lifetime_max')
  t.equal((await dev2.send('POST', '/rd', 'lt=60')).code, '4.00', 'no ep')
  t.equal((await dev2.send('POST', '/rd', 'ep=dev2&lwm2m=1.1')).code, '4.00')
  t.equal((await dev2.send('GET', '/rd', 'ep=dev2')).code, '4.05')
  t.equal((await dev2.send('POST', '/bs', 'ep=dev2')).code, '4.04')
})

t.test('de-register: 2.02 and the client disconnects', async (t) => {
  const dev = await device('dev3')
  t.equal((await dev.register()).code, '2.01')
  t.ok(await connection('dev3'))
  t.equal((await dev.deregister()).code, '2.02')
  await until(async () => await connection('dev3') === undefined, 'dev3 leaves the connections')
  t.equal((await dev.update()).code, '4.04', 'the location is gone')
})

t.test('lifetime expiry ends the registration', async (t) => {
  const dev = await device('dev-expiring')
  const before = await metric('lwm2m/registrations/expired')
  t.equal((await dev.register({ lt: 1 })).code, '2.01')
  await until(async () => await connection('dev-expiring') === undefined, 'the expired registration\'s client leaves')
  t.equal(await metric('lwm2m/registrations/expired'), before + 1)
  t.equal((await dev.update()).code, '4.04')
})

t.test('queue mode (UQ): a command waits for the device\'s next update', async (t) => {
  const dev = await device('dev-sleepy')
  t.equal((await dev.register({ b: 'UQ' })).code, '2.01')
  const reqID = nextReq++
  const from = seen.length
  await app.publishAsync('lwm2m/dev-sleepy/dn', JSON.stringify({ reqID, msgType: 'read', data: { path: '/3/0/2' } }), { qos: 1 })
  // the command reached the gateway (a second one, refused at once, comes back after it) but not the device
  const probe = nextReq++
  await app.publishAsync('lwm2m/dev-sleepy/dn', JSON.stringify({ reqID: probe, msgType: 'nothing', data: {} }), { qos: 1 })
  await nextMessage((m) => m.json.reqID === probe, 'the probe', from)
  t.equal(dev.received.length, 0, 'nothing sent to the sleeping device')
  t.equal((await dev.update()).code, '2.04')
  t.match((await nextMessage((m) => m.json.reqID === reqID, 'the held command\'s answer', from)).json, { data: { code: '2.05', content: [{ path: '/3/0/2', value: '345000123' }] } })
  t.equal(dev.received.length, 1)
})

t.test('a device that does not answer: 5.04 after lwm2m.command_timeout', async (t) => {
  const dev = await device('dev-mute')
  t.equal((await dev.register()).code, '2.01')
  dev.silent = true
  t.match(await command('dev-mute', 'read', { path: '/3/0/0' }), { data: { code: '5.04', codeMsg: 'gateway_timeout', reason: 'the device did not answer' } })
})

t.test('the auth chain refuses an endpoint, and a banned one: 4.03', async (t) => {
  const dev = await device('bad-device')
  const answer = await dev.register()
  t.equal(answer.code, '4.03')
  t.match(answer.payload.toString(), /not_authorized/)
  t.equal(await connection('bad-device'), undefined)
  // a banned client id: the same refusal, saying why
  t.equal((await node.http('POST', '/banned/', { who: 'dev-banned', as: 'client_id', reason: 'test' })).status, 200)
  const banned = await device('dev-banned')
  const refused = await banned.register()
  t.equal(refused.code, '4.03')
  t.match(refused.payload.toString(), /banned/)
  t.equal((await node.http('DELETE', '/banned/dev-banned?as=client_id')).status, 200)
  t.equal((await banned.register()).code, '2.01')
})

t.test('the ACL: a denied command subscription refuses the Register; a denied response is dropped and counted', async (t) => {
  const sub = await device('acl-sub')
  const refused = await sub.register()
  t.equal(refused.code, '4.03')
  t.match(refused.payload.toString(), 'not authorized to subscribe to lwm2m/acl-sub/dn/#')

  const pub = await device('acl-pub')
  const before = await metric('lwm2m/messages/refused')
  t.equal((await pub.register()).code, '2.01')
  const from = seen.length
  await app.publishAsync('lwm2m/acl-pub/dn', JSON.stringify({ reqID: 'denied', msgType: 'read', data: { path: '/3/0/0' } }), { qos: 1 })
  await until(() => pub.received.length === 1, 'the command reaches the device')
  // the register message and the answer: both refused by the ACL
  await until(async () => await metric('lwm2m/messages/refused') >= before + 2, 'the refusals counted')
  t.notOk(seen.slice(from).some((m) => m.topic.startsWith('lwm2m/acl-pub/')), 'nothing of acl-pub routed')
})

t.test('kick: the registration ends, the next update is 4.04 and the device registers again', async (t) => {
  const dev = await device('dev-kicked')
  t.equal((await dev.register()).code, '2.01')
  t.equal((await node.http('DELETE', '/connections/dev-kicked')).status, 200)
  await until(async () => await connection('dev-kicked') === undefined, 'the kicked client leaves')
  t.equal((await dev.update()).code, '4.04')
  t.equal((await dev.register()).code, '2.01')
  const { body } = await node.http('GET', `/nodes/${node.node.name}/listeners`)
  t.match((body as Array<Record<string, unknown>>).find((l) => l.protocol === 'lwm2m:udp'), { shutdown_count: { kicked: 1 } })
})

t.test('malformed and oversized datagrams are dropped and counted; the gateway goes on', async (t) => {
  const malformed = await metric('lwm2m/datagrams/malformed')
  const tooLarge = await metric('lwm2m/datagrams/too_large')
  const raw = createSocket('udp4')
  const send = async (bytes: Buffer): Promise<void> => await new Promise((resolve, reject) => raw.send(bytes, gatewayPort, '127.0.0.1', (err) => err ? reject(err) : resolve()))
  await send(Buffer.from([0x00, 0x01]))                      // version 0
  await send(Buffer.from([0x48, 0x02, 0x12, 0x34, 0x01]))    // a token of 8 bytes cut short
  await send(Buffer.alloc(3000, 0x40))                      // over the size limit
  // a Register in blocks (RFC 7959 Block1): not taken
  await send(generate({ code: '0.02', messageId: 7, token: Buffer.from([1]), options: [{ name: 'Uri-Path', value: Buffer.from('rd') }, { name: 'Uri-Query', value: Buffer.from('ep=blocky') }, { name: 'Block1', value: Buffer.from([0x08]) }], payload: Buffer.from('</1/0>') }))
  raw.close()
  await until(async () => await metric('lwm2m/datagrams/malformed') >= malformed + 2, 'the malformed datagrams counted')
  await until(async () => await metric('lwm2m/datagrams/too_large') >= tooLarge + 2, 'the oversized and block-wise datagrams counted')
  t.equal(await metric('lwm2m/datagrams/malformed'), malformed + 2, 'version 0 and a token cut short')
  t.equal(await metric('lwm2m/datagrams/too_large'), tooLarge + 2)
  t.equal(await connection('blocky'), undefined)
  // a flood of 2000 (UDP may lose some on the way: counted at least in part, never a crash)
  const flood = createSocket('udp4')
  for (let i = 0; i < 2000; i++) flood.send(Buffer.from([0x4f, i & 0xff, 0, 1]), gatewayPort, '127.0.0.1')
  await until(async () => await metric('lwm2m/datagrams/malformed') > malformed + 2, 'the flood counted')
  flood.close()
  const dev = devices.find((d) => d.ep === 'dev1')!
  t.equal((await dev.update()).code, '2.04', 'the gateway still answers')
  t.match(await command('dev1', 'read', { path: '/3/0/1' }), { data: { code: '2.05' } })
})
