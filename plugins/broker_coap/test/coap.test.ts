// broker_coap on a real node with real clients: Debian's libcoap
// coap-client and the npm `coap` package's client, MQTT.js on the MQTT
// side, a raw UDP socket (the kit's codec) for duplicates, malformed
// datagrams and withheld ACKs. A CoAP client is a client of the broker:
// the auth chain (broker_auth_username), the ACL (acl.conf), listings with
// proto_name CoAP, $SYS presence, kicks.
import t from 'tap'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { MqttClient } from 'mqtt'
import { coap } from '../../../lib/plugin-kit/index.js'
import { startPluginNode, type PluginNode } from '../../../lib/plugin-kit/testing.js'
import { CliObserver, coapClient, npmObserve, npmRequest, RawCoap } from './clients.js'

const { CODE, OPTION, TYPE } = coap

interface Listener { protocol: string, listen_on: string, current_conns: number, max_conns: number, shutdown_count: [] | { closed: number, kicked: number } }
interface Connection { client_id: string, proto_name: string, proto_ver: string | number, ipaddress: string, username: string, keepalive: number }

let node: PluginNode
let port = 0
let dir = ''
let mqtt: MqttClient
const raws: RawCoap[] = []

const url = (topic: string, query: string): string => `coap://127.0.0.1:${port}/mqtt/${topic}?${query}`

async function listener (): Promise<Listener> {
  const { body } = await node.http('GET', `/nodes/${node.node.name}/listeners`)
  return (body as Listener[]).find((l) => l.protocol === 'coap:udp')!
}

async function connection (clientId: string): Promise<Connection | undefined> {
  const { body } = await node.http('GET', `/connections/${encodeURIComponent(clientId)}`)
  return (body as Connection[])[0]
}

async function subscriptions (clientId: string): Promise<string[]> {
  const { body } = await node.http('GET', `/subscriptions/${encodeURIComponent(clientId)}`)
  return (body as Array<{ topic: string }>).map((s) => s.topic)
}

async function metric (key: string): Promise<number> {
  const { body } = await node.http('GET', `/nodes/${node.node.name}/metrics/`)
  return (body as Record<string, number>)[key] ?? 0
}

async function until (what: string, check: () => Promise<boolean> | boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!await check()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** The messages MQTT.js receives on `topic`. */
function collect (topic: string): string[] {
  const got: string[] = []
  mqtt.on('message', (received, payload) => { if (received === topic) got.push(payload.toString()) })
  return got
}

function raw (): RawCoap {
  const client = new RawCoap(port)
  raws.push(client)
  return client
}

t.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'broker-coap-'))
  const acl = join(dir, 'acl.conf')
  await writeFile(acl, [
    '{deny, {user, "alice"}, publish, ["secret/#"]}.',
    '{deny, all, subscribe, ["private/#"]}.',
    '{allow, all}.'
  ].join('\n'))
  node = await startPluginNode({
    plugin: 'broker_coap',
    // short RFC 7252 timers: a withheld ACK ends an observation within a second
    settings: { 'coap.port': '127.0.0.1:0', 'coap.ack_timeout': '100ms', 'coap.max_retransmit': 2, 'coap.max_body_size': '4KB', 'coap.enable_stats': 'on' },
    node: { 'mqtt.acl_file': acl },
    others: { broker_auth_username: { 'auth.user.1.username': 'alice', 'auth.user.1.password': 'secret' }, broker_modules: {}, broker_retainer: {} },
    withApi: true
  })
  port = Number((await listener()).listen_on.split(':')[1])
  mqtt = await node.mqtt({ clientId: 'mqtt-peer', protocolVersion: 5 })
  await mqtt.subscribeAsync(['to-mqtt/#', 'secret/#', '$SYS/brokers/+/clients/+/+'], { qos: 1 })
})

t.teardown(async () => {
  for (const r of raws) r.close()
  await mqtt?.endAsync()
  await node?.stop()
  await rm(dir, { recursive: true, force: true })
})

t.test('PUT and POST publish to MQTT (coap-client CON, npm coap NON and CON); the client is listed as CoAP and announced on $SYS', async (t) => {
  const got = collect('to-mqtt/a')
  const sys: string[] = []
  mqtt.on('message', (topic, payload) => { if (topic.endsWith('/clients/coap-pub/connected')) sys.push(payload.toString()) })
  const put = await coapClient(['-m', 'put', '-e', 'from coap-client', url('to-mqtt/a', 'c=coap-pub&u=alice&p=secret')])
  t.equal(put.stderr, '', 'coap-client saw 2.04 (it prints an error code on stderr)')
  await npmRequest(port, { method: 'POST', path: '/mqtt/to-mqtt/a', query: 'c=coap-pub&u=alice&p=secret', payload: 'npm NON', confirmable: false })
  const con = await npmRequest(port, { method: 'PUT', path: '/mqtt/to-mqtt/a', query: 'c=coap-pub&u=alice&p=secret', payload: 'npm CON' })
  t.equal(con.code, '2.04')
  await until('three messages at the MQTT subscriber', () => got.length === 3)
  t.same(got.sort(), ['from coap-client', 'npm CON', 'npm NON'])

  const listed = await connection('coap-pub')
  t.match(listed, { proto_name: 'CoAP', proto_ver: 1, username: 'alice', ipaddress: '127.0.0.1', keepalive: 120 })
  await until('the $SYS connected notice', () => sys.length > 0)
  t.match(JSON.parse(sys[0]), { clientid: 'coap-pub', username: 'alice', proto_name: 'CoAP' })
  const row = await listener()
  t.ok(row.current_conns >= 1, 'counted on the listener')
  t.equal(row.max_conns, 10_000)
  const { body } = await node.http('GET', `/nodes/${node.node.name}/metrics/`)
  t.ok((body as Record<string, number>)['coap/messages/received'] >= 3, 'the gateway\'s counters are node metrics')
})

t.test('GET with Observe=0 subscribes and each MQTT message is a notification (coap-client -s, npm coap); Observe=1 cancels', async (t) => {
  const cli = new CliObserver(url('from-mqtt/%2B', 'c=coap-cli-obs'), 8)
  t.teardown(() => cli.stop())
  const npm = await npmObserve(port, '/mqtt/from-mqtt/npm', 'c=coap-npm-obs')
  t.teardown(() => npm.close())
  t.equal(npm.code, '2.05')
  await until('both observations subscribed', async () => (await subscriptions('coap-cli-obs')).includes('from-mqtt/+') && (await subscriptions('coap-npm-obs')).includes('from-mqtt/npm'))
  await mqtt.publishAsync('from-mqtt/x', 'to coap-client at QoS 0', { qos: 0 })
  await mqtt.publishAsync('from-mqtt/npm', 'to both at QoS 1', { qos: 1 })
  await until('coap-client printed both', () => cli.stdout.includes('to coap-client at QoS 0') && cli.stdout.includes('to both at QoS 1'))
  await npm.next(1)
  t.same(npm.payloads, ['to both at QoS 1'])

  // Observe=1 from the npm client ends the observation: the MQTT subscription goes
  const cancelled = await npmRequest(port, { method: 'GET', path: '/mqtt/from-mqtt/npm', query: 'c=coap-npm-obs', payload: undefined })
  t.equal(cancelled.code, '2.05', 'a plain GET: 2.05 (a keep-alive)')
  const raw1 = raw()
  raw1.request(CODE.GET, ['mqtt', 'from-mqtt', 'npm'], ['c=coap-npm-obs'], {}, [{ number: OPTION.OBSERVE, value: coap.uintOption(1) }])
  t.match(await raw1.next((m) => m.type === TYPE.ACK), { code: CODE.CONTENT })
  await until('the subscription is gone', async () => !(await subscriptions('coap-npm-obs')).includes('from-mqtt/npm'))
  cli.stop()
  await cli.done
})

t.test('block-wise: coap-client -b 64 PUT (Block1), npm coap PUT over a datagram, a large message notified in Block2 blocks', async (t) => {
  const got = collect('to-mqtt/block')
  const body = Array.from({ length: 100 }, (_, i) => `line ${String(i).padStart(3, '0')}`).join('\n')
  const put = await coapClient(['-m', 'put', '-b', '64', '-e', body, url('to-mqtt/block', 'c=coap-block')])
  t.equal(put.stderr, '', 'the block-wise PUT was taken (2.31 Continue per block, then 2.04)')
  const npmBody = 'n'.repeat(3000)
  const npmPut = await npmRequest(port, { method: 'PUT', path: '/mqtt/to-mqtt/block', query: 'c=coap-block', payload: npmBody, block1Szx: 6 })
  t.equal(npmPut.code, '2.04')
  await until('both bodies at the MQTT subscriber', () => got.length === 2)
  t.same(got, [body, npmBody], 'whole, in order')

  const cli = new CliObserver(url('big/one', 'c=coap-big'), 6, ['-b', '64'])
  t.teardown(() => cli.stop())
  await until('observed', async () => (await subscriptions('coap-big')).includes('big/one'))
  const large = Array.from({ length: 60 }, (_, i) => `block-data-${i}`).join(',')
  await mqtt.publishAsync('big/one', large, { qos: 1 })
  await until('coap-client put the 64-byte blocks together', () => cli.stdout.includes(large))
  cli.stop()
  await cli.done
})

t.test('a retained message is notified right after the 2.05 that registers the observation, numbered after it', async (t) => {
  await mqtt.publishAsync('kept/topic', 'retained payload', { qos: 1, retain: true })
  const peer = raw()
  const register = peer.request(CODE.GET, ['mqtt', 'kept', '#'], ['c=coap-retained'], { type: TYPE.NON }, [{ number: OPTION.OBSERVE, value: Buffer.alloc(0) }])
  const registered = await peer.next((m) => m.token.equals(register.token) && m.code === CODE.CONTENT && m.payload.length === 0)
  const notified = await peer.next((m) => m.token.equals(register.token) && m.payload.toString() === 'retained payload')
  t.ok(peer.received.indexOf(registered) < peer.received.indexOf(notified), 'the 2.05 first')
  t.ok(coap.uint(notified, OPTION.OBSERVE)! > coap.uint(registered, OPTION.OBSERVE)!)
  if (notified.type === TYPE.CON) peer.ack(notified)
  await mqtt.publishAsync('kept/topic', '', { qos: 1, retain: true })
})

t.test('CON notifications (QoS 1): retransmitted until ACKed; an observer that never ACKs, or answers RST, is removed', async (t) => {
  const peer = raw()
  const register = peer.request(CODE.GET, ['mqtt', 'con', 'topic'], ['c=coap-raw-con'], {}, [{ number: OPTION.OBSERVE, value: Buffer.alloc(0) }])
  const registered = await peer.next((m) => m.type === TYPE.ACK && m.messageId === register.messageId)
  t.match(registered, { code: CODE.CONTENT })
  t.ok(coap.uint(registered, OPTION.OBSERVE)! > 0, 'the 2.05 carries Observe')

  const retransmittedBefore = await metric('coap/messages/retransmitted')
  await mqtt.publishAsync('con/topic', 'qos1', { qos: 1 })
  const first = await peer.next((m) => m.type === TYPE.CON && m.payload.toString() === 'qos1')
  t.same(first.token, register.token, 'the observation\'s token')
  const again = await peer.next((m) => m.type === TYPE.CON && m.payload.toString() === 'qos1', 'the retransmission')
  t.equal(again.messageId, first.messageId, 'retransmitted with the same message id')
  peer.ack(again)
  await mqtt.publishAsync('con/topic', 'qos0', { qos: 0 })
  const non = await peer.next((m) => m.payload.toString() === 'qos0')
  t.equal(non.type, TYPE.NON, 'a QoS 0 message is a NON notification')
  t.ok(coap.uint(non, OPTION.OBSERVE)! > coap.uint(first, OPTION.OBSERVE)!, 'numbered after the earlier one')
  t.ok(await metric('coap/messages/retransmitted') > retransmittedBefore)

  // never acknowledged: after MAX_RETRANSMIT the observation ends and so does the subscription
  await mqtt.publishAsync('con/topic', 'ignored', { qos: 1 })
  await until('the unacknowledged observation is removed', async () => !(await subscriptions('coap-raw-con')).includes('con/topic'))

  // RST to a notification ends the observation too (RFC 7641 §3.6)
  const register2 = peer.request(CODE.GET, ['mqtt', 'rst', 'topic'], ['c=coap-raw-con'], {}, [{ number: OPTION.OBSERVE, value: Buffer.alloc(0) }])
  await peer.next((m) => m.type === TYPE.ACK && m.messageId === register2.messageId)
  await mqtt.publishAsync('rst/topic', 'reset me', { qos: 1 })
  peer.reset(await peer.next((m) => m.payload.toString() === 'reset me'))
  await until('the reset observation is removed', async () => !(await subscriptions('coap-raw-con')).includes('rst/topic'))
})

t.test('a duplicate CON is handled once and answered with the same ACK; a duplicate NON is dropped', async (t) => {
  const got = collect('to-mqtt/dup')
  const peer = raw()
  const put = peer.request(CODE.PUT, ['mqtt', 'to-mqtt', 'dup'], ['c=coap-dup'], { payload: Buffer.from('once') })
  const answer = await peer.next((m) => m.messageId === put.messageId)
  const duplicatesBefore = await metric('coap/messages/duplicate')
  peer.sendBytes(coap.serialize(put))
  const again = await peer.next((m) => m.messageId === put.messageId)
  t.same(coap.serialize(again), coap.serialize(answer), 'the same ACK again')
  const non = peer.request(CODE.PUT, ['mqtt', 'to-mqtt', 'dup'], ['c=coap-dup'], { type: TYPE.NON, payload: Buffer.from('non once') })
  peer.sendBytes(coap.serialize(non))
  await until('the NON and the duplicates counted', async () => await metric('coap/messages/duplicate') === duplicatesBefore + 2)
  // a marker after them: everything before it was handled
  const marker = peer.request(CODE.PUT, ['mqtt', 'to-mqtt', 'dup'], ['c=coap-dup'], { payload: Buffer.from('marker') })
  await peer.next((m) => m.messageId === marker.messageId)
  await until('the marker at the subscriber', () => got.includes('marker'))
  t.same(got, ['once', 'non once', 'marker'], 'each message published once')
})

t.test('malformed datagrams are dropped and counted, a CON with a readable header gets RST; the gateway keeps answering', async (t) => {
  const peer = raw()
  const before = await metric('coap/messages/malformed')
  peer.sendBytes(Buffer.from([0x40, 0x03, 0x12, 0x34, 0xff])) // payload marker, no payload
  t.match(await peer.next((m) => m.messageId === 0x1234), { type: TYPE.RST })
  peer.sendBytes(Buffer.from([0x01, 0x02])) // cut short
  peer.sendBytes(Buffer.from([0x58, 0x03, 0x00, 0x01, 0x01])) // NON, token cut short
  peer.sendBytes(Buffer.concat([Buffer.from([0x40, 0x03, 0x00, 0x02]), Buffer.alloc(2000, 0x00)])) // 2000 empty options
  await until('four counted', async () => await metric('coap/messages/malformed') === before + 4)
  const ping = peer.send({ code: CODE.EMPTY })
  t.match(await peer.next((m) => m.messageId === ping.messageId), { type: TYPE.RST }, 'CoAP ping answered')
  const put = peer.request(CODE.PUT, ['mqtt', 'to-mqtt', 'after'], ['c=coap-malformed'], { payload: Buffer.from('still here') })
  t.match(await peer.next((m) => m.messageId === put.messageId), { code: CODE.CHANGED })
})

t.test('refusals: bad credentials 4.01, the ACL 4.03 (PUT and Observe), bad requests 4.00 / 4.04 / 4.05 / 4.13', async (t) => {
  const wrong = await coapClient(['-m', 'put', '-e', 'x', url('to-mqtt/a', 'c=coap-wrong&u=alice&p=nope')])
  t.match(wrong.stderr, /4\.01/, 'broker_auth_username refuses the password')
  t.equal(await connection('coap-wrong'), undefined)

  const secretGot = collect('secret/x')
  const denied = await coapClient(['-m', 'put', '-e', 'x', url('secret/x', 'c=coap-alice&u=alice&p=secret')])
  t.match(denied.stderr, /4\.03 not authorized to publish to secret\/x/)
  const observeDenied = await npmRequest(port, { method: 'GET', path: '/mqtt/private/a', query: 'c=coap-alice&u=alice&p=secret&x=1', payload: undefined }).catch(() => undefined)
  t.equal(observeDenied?.code, '2.05', 'a plain GET is no subscription')
  const peer = raw()
  const obs = peer.request(CODE.GET, ['mqtt', 'private', 'a'], ['c=coap-alice', 'u=alice', 'p=secret'], {}, [{ number: OPTION.OBSERVE, value: Buffer.alloc(0) }])
  const refused = await peer.next((m) => m.messageId === obs.messageId)
  t.match(refused, { code: CODE.FORBIDDEN })
  t.equal(coap.option(refused, OPTION.OBSERVE), undefined, 'no Observe: not registered')
  t.same(await subscriptions('coap-alice'), [])
  t.same(secretGot, [], 'the denied message reached no one')

  t.match((await coapClient(['-m', 'put', '-e', 'x', url('to-mqtt/a', 'u=alice')])).stderr, /4\.00 c=<clientid> is missing/)
  t.match((await coapClient(['-m', 'put', '-e', 'x', url('a/%2B', 'c=coap-bad')])).stderr, /4\.00 "a\/\+" is not a valid MQTT topic name/)
  t.match((await coapClient(['-m', 'put', '-e', 'x', `coap://127.0.0.1:${port}/other/a?c=coap-bad`])).stderr, /4\.04/)
  t.match((await coapClient(['-m', 'delete', url('to-mqtt/a', 'c=coap-bad')])).stderr, /4\.05/)
  const big = peer.request(CODE.PUT, ['mqtt', 'to-mqtt', 'big'], ['c=coap-bad'], { payload: Buffer.alloc(5000, 1) })
  const tooLarge = await peer.next((m) => m.messageId === big.messageId)
  t.match(tooLarge, { code: CODE.REQUEST_ENTITY_TOO_LARGE })
  t.equal(coap.uint(tooLarge, OPTION.SIZE1), 4096)
})

t.test('kicked through the API: the observer gets a final 5.03, the client leaves the listings, the listener counts it', async (t) => {
  const peer = raw()
  const register = peer.request(CODE.GET, ['mqtt', 'kick', 'me'], ['c=coap-kicked'], {}, [{ number: OPTION.OBSERVE, value: Buffer.alloc(0) }])
  await peer.next((m) => m.messageId === register.messageId)
  t.ok(await connection('coap-kicked'))
  const kickedBefore = await listener().then((l) => Array.isArray(l.shutdown_count) ? 0 : l.shutdown_count.kicked)
  t.equal((await node.http('DELETE', '/connections/coap-kicked')).status, 200)
  const final = await peer.next((m) => m.code === CODE.SERVICE_UNAVAILABLE)
  t.same(final.token, register.token)
  t.match(final.payload.toString(), /administrative_action/)
  await until('gone from the listing', async () => await connection('coap-kicked') === undefined)
  t.match(await listener(), { shutdown_count: { kicked: kickedBefore + 1 } })
  // a new request connects it again
  const put = peer.request(CODE.PUT, ['mqtt', 'to-mqtt', 'back'], ['c=coap-kicked'], { payload: Buffer.from('back') })
  t.match(await peer.next((m) => m.messageId === put.messageId), { code: CODE.CHANGED })
  t.ok(await connection('coap-kicked'))
})

t.test('a banned client id is refused 4.03 with its reason', async (t) => {
  t.equal((await node.http('POST', '/banned/', { who: 'coap-banned', as: 'client_id', reason: 'test' })).status, 200)
  t.teardown(async () => { await node.http('DELETE', '/banned/coap-banned?as=client_id') })
  const banned = await coapClient(['-m', 'put', '-e', 'x', url('to-mqtt/a', 'c=coap-banned')])
  t.match(banned.stderr, /4\.03 this client is banned \(banned\)/)
  t.equal(await connection('coap-banned'), undefined)
})

t.test('a flood from one peer (2000 NON PUTs, 500 CON pings, 200 client ids) is answered or refused, never crashes; coap.max_clients holds', async (t) => {
  const got = collect('to-mqtt/flood')
  const peer = raw()
  for (let i = 0; i < 2000; i++) peer.request(CODE.PUT, ['mqtt', 'to-mqtt', 'flood'], ['c=coap-flood'], { type: TYPE.NON, payload: Buffer.from(String(i)) })
  for (let i = 0; i < 500; i++) peer.send({ code: CODE.EMPTY })
  const path = `/nodes/${node.node.name}/plugin_configs/broker_coap`
  const clientsNow = (await listener()).current_conns
  t.equal((await node.http('PUT', path, { 'coap.max_clients': String(clientsNow + 50) })).status, 200)
  t.teardown(async () => { await node.http('PUT', path, { 'coap.max_clients': null }) })
  const puts = Array.from({ length: 200 }, (_, i) => peer.request(CODE.PUT, ['mqtt', 'to-mqtt', 'many'], [`c=coap-many-${i}`], { payload: Buffer.from('x') }))
  const answers = await Promise.all(puts.map(async (put) => await peer.exchange(put)))
  const codes = answers.map((m) => coap.codeText(m.code))
  t.ok(codes.every((c) => c === '2.04' || c === '5.03'), 'each new client is let in or refused 5.03')
  t.ok(codes.filter((c) => c === '2.04').length <= 50, 'no more than coap.max_clients')
  t.ok(codes.includes('5.03'), 'the clients beyond the limit are refused')
  t.ok((await listener()).current_conns <= clientsNow + 50)
  const last = peer.request(CODE.PUT, ['mqtt', 'to-mqtt', 'flood'], ['c=coap-flood'], { payload: Buffer.from('last') })
  t.match(await peer.exchange(last), { code: CODE.CHANGED }, 'the gateway still answers')
  await until('the last flood message arrived', () => got.includes('last'))
  t.ok(got.length <= 2001, 'nothing published twice')
})

t.test('live settings: a bad value is refused with file:line; coap.keepalive ends a silent client', async (t) => {
  const path = `/nodes/${node.node.name}/plugin_configs/broker_coap`
  const bad = await node.http('PUT', path, { 'coap.max_retransmit': 'lots' })
  t.equal(bad.status, 400)
  t.match(JSON.stringify(bad.body), /broker_coap\.conf:\d+: coap\.max_retransmit: \S+ is not (a number|an integer)/)
  t.equal((await node.http('PUT', path, { 'coap.keepalive': '1s' })).status, 200)
  t.teardown(async () => { await node.http('PUT', path, { 'coap.keepalive': null }) })
  const peer = raw()
  const put = peer.request(CODE.PUT, ['mqtt', 'to-mqtt', 'idle'], ['c=coap-idle'], { payload: Buffer.from('x') })
  await peer.next((m) => m.messageId === put.messageId)
  t.equal((await connection('coap-idle'))?.keepalive, 1)
  await until('the silent client is disconnected', async () => await connection('coap-idle') === undefined)

  // a silent observer is pinged (an Empty CON): answering keeps it, silence ends it
  const observer = raw()
  const register = observer.request(CODE.GET, ['mqtt', 'idle', 'obs'], ['c=coap-idle-obs'], {}, [{ number: OPTION.OBSERVE, value: Buffer.alloc(0) }])
  await observer.next((m) => m.messageId === register.messageId)
  const ping = await observer.next((m) => m.type === TYPE.CON && m.code === CODE.EMPTY, 'a CoAP ping')
  observer.reset(ping)
  await observer.next((m) => m.type === TYPE.CON && m.code === CODE.EMPTY && m.messageId !== ping.messageId, 'the next ping, a keep-alive later')
  t.ok(await connection('coap-idle-obs'), 'the answered ping kept the client')
  await until('the silent observer is disconnected', async () => await connection('coap-idle-obs') === undefined)
})
