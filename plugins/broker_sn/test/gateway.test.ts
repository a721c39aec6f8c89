// broker_sn on a real node: MQTT-SN clients (the plugin's codec over real
// UDP sockets, test/client.ts) and MQTT.js on the MQTT side. One node for
// the file: the auth chain (broker_auth_username, mqtt.allow_anonymous off)
// knows the gateway's user, an ACL file denies a topic each way,
// broker_modules announces presence on $SYS. Short retry and keep-alive
// durations keep the timers' tests quick; waits key on packets and events.
import t from 'tap'
import { createSocket } from 'node:dgram'
import { once } from 'node:events'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { MqttClient } from 'mqtt'
import { startPluginNode, type PluginNode } from '../../../lib/plugin-kit/testing.js'
import { encode, flags, type SnPacket } from '../codec.js'
import { SnClient } from './client.js'

interface Listener { protocol: string, listen_on: string, current_conns: number, max_conns: number, shutdown_count: [] | { closed: number, kicked: number } }
interface Connection { client_id: string, proto_name: string, proto_ver: string | number, ipaddress: string, port: number, username: string, keepalive: number }

const MQTT_USER = { username: 'mqtt', password: 'mqtt-pw' }
let node: PluginNode
let port = 0
let dir = ''
const advertised: SnPacket[] = []
const advertiseSocket = createSocket('udp4')
const clients: SnClient[] = []

async function sn (): Promise<SnClient> {
  const client = await SnClient.open(port)
  clients.push(client)
  return client
}

async function listener (): Promise<Listener> {
  const { body } = await node.http('GET', `/nodes/${node.node.name}/listeners`)
  return (body as Listener[]).find((l) => l.protocol === 'mqtt-sn:udp')!
}

async function connection (clientId: string): Promise<Connection | undefined> {
  const { body } = await node.http('GET', `/connections/${encodeURIComponent(clientId)}`)
  return (body as { data?: Connection[] }).data?.[0] ?? (body as Connection[])[0]
}

async function metric (key: string): Promise<number> {
  const { body } = await node.http('GET', `/nodes/${node.node.name}/metrics/`)
  return (body as Record<string, number>)[key] ?? 0
}

async function setting (key: string, value: string | null): Promise<void> {
  const { status, body } = await node.http('PUT', `/nodes/${node.node.name}/plugin_configs/broker_sn`, { [key]: value })
  if (status !== 200) throw new Error(`${key}: ${status} ${JSON.stringify(body)}`)
}

async function until (what: string, check: () => Promise<boolean> | boolean, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!await check()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** MQTT.js messages of a subscriber, awaited by topic. */
function inbox (client: MqttClient): { next: (topic: string) => Promise<{ payload: string, retain: boolean, qos: number }>, topics: string[] } {
  const got: Array<{ topic: string, payload: string, retain: boolean, qos: number }> = []
  const waiters: Array<() => void> = []
  client.on('message', (topic, payload, packet) => {
    got.push({ topic, payload: payload.toString(), retain: packet.retain, qos: packet.qos })
    for (const wake of waiters.splice(0)) wake()
  })
  return {
    get topics () { return got.map((m) => m.topic) },
    async next (topic) {
      const deadline = Date.now() + 15_000
      for (;;) {
        const index = got.findIndex((m) => m.topic === topic)
        if (index >= 0) return got.splice(index, 1)[0]
        if (Date.now() > deadline) throw new Error(`no MQTT message on ${topic}; got ${JSON.stringify(got.map((m) => m.topic))}`)
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 200)
          waiters.push(() => { clearTimeout(timer); resolve() })
        })
      }
    }
  }
}

t.before(async () => {
  advertiseSocket.on('message', (datagram) => advertised.push(JSON.parse(JSON.stringify(decodeOr(datagram))) as SnPacket))
  advertiseSocket.bind(0, '127.0.0.1')
  await once(advertiseSocket, 'listening')
  dir = await mkdtemp(join(tmpdir(), 'broker-sn-'))
  const acl = join(dir, 'acl.conf')
  await writeFile(acl, [
    '{deny, {user, "snuser"}, publish, ["secret/#"]}.',
    '{deny, {user, "snuser"}, subscribe, ["private/#"]}.',
    '{allow, all}.'
  ].join('\n'))
  node = await startPluginNode({
    plugin: 'broker_sn',
    settings: {
      'mqtt.sn.port': '127.0.0.1:0',
      'mqtt.sn.advertise_duration': '1m',
      'mqtt.sn.advertise_to': `127.0.0.1:${advertiseSocket.address().port}`,
      'mqtt.sn.gateway_id': 7,
      'mqtt.sn.username': 'snuser',
      'mqtt.sn.password': 'snpass',
      'mqtt.sn.enable_qos3': 'on',
      'mqtt.sn.subs_resume': 'on',
      'mqtt.sn.retry_interval': '300ms',
      'mqtt.sn.max_retries': 3,
      'mqtt.sn.max_packet_size': 1024,
      'mqtt.sn.predefined.topic.1': 'pre/one',
      'mqtt.sn.predefined.topic.2': 'pre/two'
    },
    node: { 'mqtt.allow_anonymous': 'false', 'mqtt.acl_file': acl },
    others: {
      broker_auth_username: { 'auth.user.1.username': 'snuser', 'auth.user.1.password': 'snpass', 'auth.user.2.username': MQTT_USER.username, 'auth.user.2.password': MQTT_USER.password },
      broker_modules: {}
    },
    withApi: true
  })
  port = Number((await listener()).listen_on.split(':')[1])
})

function decodeOr (datagram: Buffer): unknown {
  return { octets: [...datagram] }
}

t.teardown(async () => {
  await Promise.all(clients.map(async (c) => await c.close()))
  await new Promise<void>((resolve) => advertiseSocket.close(() => resolve()))
  await node.stop()
  await rm(dir, { recursive: true, force: true })
})

t.test('discovery: ADVERTISE at start, SEARCHGW answered by GWINFO; the listener row', async (t) => {
  await until('an ADVERTISE', () => advertised.length > 0)
  t.same(advertised[0], { octets: [...encode({ type: 'advertise', gwId: 7, duration: 60 })] }, 'ADVERTISE: gateway id 7, duration 60 s')
  const client = await sn()
  const gwinfo = await client.request({ type: 'searchgw', radius: 1 }, 'gwinfo')
  t.same(gwinfo, { type: 'gwinfo', gwId: 7 })
  t.match(await listener(), { protocol: 'mqtt-sn:udp', listen_on: `127.0.0.1:${port}`, max_conns: 1024, current_conns: 0 })
})

t.test('CONNECT, REGISTER, PUBLISH at QoS 0, 1, 2 and -1 to MQTT; listed as MQTT-SN; $SYS presence', async (t) => {
  const mqtt = await node.mqtt({ clientId: 'sn-watcher', ...MQTT_USER })
  await mqtt.subscribeAsync(['to-mqtt/#', 'pre/#', 'ab', '$SYS/brokers/+/clients/sn-one/+'], { qos: 2 })
  const got = inbox(mqtt)
  const client = await sn()
  t.equal(await client.connect('sn-one', { duration: 30 }), 0, 'CONNACK accepted')
  const presence = JSON.parse((await got.next(`$SYS/brokers/${node.node.name}/clients/sn-one/connected`)).payload) as Record<string, unknown>
  t.match(presence, { clientid: 'sn-one', username: 'snuser', proto_name: 'MQTT-SN', proto_ver: '1.2', ipaddress: '127.0.0.1' })
  t.match(await connection('sn-one'), { proto_name: 'MQTT-SN', proto_ver: '1.2', ipaddress: '127.0.0.1', port: client.localPort, username: 'snuser', keepalive: 30 })

  const regack = await client.register('to-mqtt/x')
  t.match(regack, { returnCode: 0 })
  t.ok(regack.topicId > 0 && regack.topicId < 0xffff, 'a topic id')
  t.equal((await client.register('to-mqtt/x')).topicId, regack.topicId, 'the same name, the same id')
  t.match(await client.register('to-mqtt/+'), { topicId: 0, returnCode: 3 }, 'a wildcard cannot be registered')

  await client.publish(regack.topicId, 'qos0')
  t.match(await got.next('to-mqtt/x'), { payload: 'qos0', qos: 0 })
  t.match(await client.publish(regack.topicId, 'qos1', { qos: 1 }), { type: 'puback', topicId: regack.topicId, returnCode: 0 })
  t.match(await got.next('to-mqtt/x'), { payload: 'qos1', qos: 1 })
  t.match(await client.publish(regack.topicId, 'qos2', { qos: 2, retain: true }), { type: 'pubrec' })
  t.match(await got.next('to-mqtt/x'), { payload: 'qos2', qos: 2 })
  // a QoS 2 PUBLISH sent again (DUP) before PUBREL: PUBREC again, published once
  const dupId = client.nextMsgId()
  const dup = { type: 'publish', flags: flags({ qos: 2 }), topicId: regack.topicId, msgId: dupId, data: Buffer.from('once') } as const
  await client.request(dup, 'pubrec', (p) => p.msgId === dupId)
  const again = client.received.length
  await client.request({ ...dup, flags: flags({ qos: 2, dup: true }) }, 'pubrec', (p) => p.msgId === dupId)
  await client.request({ type: 'pubrel', msgId: dupId }, 'pubcomp', (p) => p.msgId === dupId)
  t.match(await got.next('to-mqtt/x'), { payload: 'once', qos: 2 })
  t.ok(client.received.length > again)
  await client.publish(1, 'predefined at -1', { qos: -1, topicIdType: 1 })
  t.match(await got.next('pre/one'), { payload: 'predefined at -1', qos: 0 })
  t.notOk(got.topics.includes('to-mqtt/x'), 'the DUP was not published again')
  await client.publish(0x6162, 'short at -1', { qos: -1, topicIdType: 2 })
  t.match(await got.next('ab'), { payload: 'short at -1' })
  t.match(await client.publish(2, 'predefined at 1', { qos: 1, topicIdType: 1 }), { returnCode: 0 })
  t.match(await got.next('pre/two'), { payload: 'predefined at 1' })

  t.match(await client.publish(999, 'unknown id', { qos: 1 }), { type: 'puback', topicId: 999, returnCode: 2 }, 'an unknown topic id: invalid topic id')
  t.match(await client.publish(99, 'unknown predefined', { qos: 1, topicIdType: 1 }), { returnCode: 2 })
  t.match(await client.publish(0x2b2b, '++', { qos: 1, topicIdType: 2 }), { returnCode: 3 }, 'a short topic with wildcards: not supported')
  t.match(await client.publish(1, 'reserved type', { qos: 1, topicIdType: 3 }), { returnCode: 3 })

  t.equal((await client.request({ type: 'pingreq' }, 'pingresp')).type, 'pingresp')
  const gone = got.next(`$SYS/brokers/${node.node.name}/clients/sn-one/disconnected`)
  t.same(await client.request({ type: 'disconnect' }, 'disconnect'), { type: 'disconnect' })
  t.match(JSON.parse((await gone).payload), { clientid: 'sn-one', reason: 'normal' })
  await until('gone from the listing', async () => await connection('sn-one') === undefined)
  await mqtt.endAsync()
})

t.test('SUBSCRIBE by topic name, predefined id, short name and wildcard; messages from MQTT; REGISTER from the gateway; UNSUBSCRIBE', async (t) => {
  const mqtt = await node.mqtt({ clientId: 'sn-publisher', ...MQTT_USER })
  const client = await sn()
  t.equal(await client.connect('sn-sub'), 0)
  const named = await client.subscribe('from-mqtt/named', { qos: 1 })
  t.match(named, { returnCode: 0, flags: { qos: 1 } })
  t.ok(named.topicId > 0, 'a topic name gets its id in SUBACK')
  t.match(await client.subscribe(2, { qos: 2, topicIdType: 1 }), { returnCode: 0, topicId: 2, flags: { qos: 2 } })
  t.match(await client.subscribe(0x7879, { topicIdType: 2 }), { returnCode: 0, topicId: 0 })
  t.match(await client.subscribe('from-mqtt/wild/+', { qos: 1 }), { returnCode: 0, topicId: 0 }, 'a wildcard: no topic id')
  t.match(await client.subscribe(77, { topicIdType: 1 }), { returnCode: 2 }, 'an unknown predefined id')
  t.match(await client.subscribe('a/#/b'), { returnCode: 3 }, 'not a topic filter')
  t.match(await client.subscribe('from-mqtt/x', { qos: -1 }), { returnCode: 3 }, 'QoS -1 is no subscription QoS')

  await mqtt.publishAsync('from-mqtt/named', 'one', { qos: 1 })
  const first = await client.next('publish', (p) => p.topicId === named.topicId)
  t.match(first, { flags: { qos: 1, topicIdType: 0 }, data: Buffer.from('one') })
  t.ok(first.msgId > 0)
  await mqtt.publishAsync('pre/two', 'two', { qos: 2 })
  t.match(await client.next('publish', (p) => p.flags.topicIdType === 1), { topicId: 2, flags: { qos: 2 }, data: Buffer.from('two') })
  await mqtt.publishAsync('xy', 'short', { qos: 0 })
  t.match(await client.next('publish', (p) => p.flags.topicIdType === 2), { topicId: 0x7879, flags: { qos: 0 }, msgId: 0, data: Buffer.from('short') })

  const from = client.received.length
  await mqtt.publishAsync('from-mqtt/wild/a', 'wild', { qos: 1 })
  const register = await client.next('register', () => true, from)
  t.match(register, { topicName: 'from-mqtt/wild/a' })
  const wild = await client.next('publish', (p) => p.topicId === register.topicId, from)
  t.ok(client.received.indexOf(register) < client.received.indexOf(wild), 'REGISTER, REGACK, then the PUBLISH with its id')
  t.match(wild, { flags: { topicIdType: 0, qos: 1 }, data: Buffer.from('wild') })
  await mqtt.publishAsync('from-mqtt/wild/a', 'again', { qos: 0 })
  await client.next('publish', (p) => p.data.toString() === 'again', from)
  t.equal(client.received.slice(from).filter((p) => p.type === 'register').length, 1, 'registered once')

  t.same(await client.unsubscribe('from-mqtt/named'), { type: 'unsuback', msgId: client.nextMsgId() - 1 })
  await client.unsubscribe(2, { topicIdType: 1 })
  const after = client.received.length
  await mqtt.publishAsync('from-mqtt/named', 'not any more', { qos: 1 })
  await mqtt.publishAsync('pre/two', 'not any more', { qos: 1 })
  await mqtt.publishAsync('xy', 'still', { qos: 1 })
  await client.next('publish', (p) => p.data.toString() === 'still', after)
  t.same(client.publishes().slice(-1).map((p) => p.data.toString()), ['still'], 'the unsubscribed topics send nothing')
  t.notOk(client.received.slice(after).some((p) => p.type === 'publish' && p.data.toString() === 'not any more'))
  client.send({ type: 'disconnect' })
  await mqtt.endAsync()
})

t.test('QoS -1 from an address without a connection: predefined ids and short names, through the gateway\'s own client', async (t) => {
  const mqtt = await node.mqtt({ clientId: 'qos-1-watcher', ...MQTT_USER })
  await mqtt.subscribeAsync(['pre/one', 'zz'], { qos: 0 })
  const got = inbox(mqtt)
  const client = await sn()
  client.send({ type: 'publish', flags: flags({ qos: -1, topicIdType: 1 }), topicId: 1, msgId: 0, data: Buffer.from('no connection') })
  t.match(await got.next('pre/one'), { payload: 'no connection' })
  client.send({ type: 'publish', flags: flags({ qos: -1, topicIdType: 2 }), topicId: 0x7a7a, msgId: 0, data: Buffer.from('short') })
  t.match(await got.next('zz'), { payload: 'short' })
  t.match(await connection(`NegQoS-Client@${node.node.name}`), { proto_name: 'MQTT-SN', username: 'snuser' })
  const dropped = await metric('mqttsn/packets/dropped')
  await setting('mqtt.sn.enable_qos3', 'off')
  client.send({ type: 'publish', flags: flags({ qos: -1, topicIdType: 1 }), topicId: 1, msgId: 0, data: Buffer.from('off') })
  await until('dropped while enable_qos3 is off', async () => await metric('mqttsn/packets/dropped') === dropped + 1)
  await setting('mqtt.sn.enable_qos3', 'on')
  await mqtt.endAsync()
})

t.test('the will: WILLTOPICREQ / WILLMSGREQ at CONNECT, WILLTOPICUPD / WILLMSGUPD, published when the keep-alive runs out', async (t) => {
  const mqtt = await node.mqtt({ clientId: 'will-watcher', ...MQTT_USER })
  await mqtt.subscribeAsync('will/#', { qos: 1 })
  const got = inbox(mqtt)
  const client = await sn()
  await client.request({ type: 'connect', flags: flags({ will: true, cleanSession: true }), protocolId: 1, duration: 1, clientId: 'sn-will' }, 'willtopicreq')
  await client.request({ type: 'willtopic', flags: flags({ qos: 1 }), topic: 'will/first' }, 'willmsgreq')
  t.match(await client.request({ type: 'willmsg', message: Buffer.from('first will') }, 'connack'), { returnCode: 0 })
  t.match(await client.request({ type: 'willtopicupd', flags: flags({ qos: 1, retain: false }), topic: 'will/updated' }, 'willtopicresp'), { returnCode: 0 })
  t.match(await client.request({ type: 'willmsgupd', message: Buffer.from('updated will') }, 'willmsgresp'), { returnCode: 0 })
  t.match(await client.request({ type: 'willtopicupd', flags: flags(), topic: 'will/#' }, 'willtopicresp'), { returnCode: 3 }, 'a will topic with a wildcard')
  // silent past 1.5 x its 1 s keep-alive
  t.match(await got.next('will/updated'), { payload: 'updated will', qos: 1 })
  t.notOk(got.topics.includes('will/first'), 'the first will is replaced')
  await until('gone', async () => await connection('sn-will') === undefined)

  const polite = await sn()
  await polite.request({ type: 'connect', flags: flags({ will: true }), protocolId: 1, duration: 1, clientId: 'sn-polite' }, 'willtopicreq')
  await polite.request({ type: 'willtopic', flags: flags(), topic: 'will/polite' }, 'willmsgreq')
  await polite.request({ type: 'willmsg', message: Buffer.from('should not come') }, 'connack')
  await polite.request({ type: 'disconnect' }, 'disconnect')
  const noWill = await sn()
  await noWill.request({ type: 'connect', flags: flags({ will: true }), protocolId: 1, duration: 1, clientId: 'sn-no-will' }, 'willtopicreq')
  t.match(await noWill.request({ type: 'willtopic' }, 'connack'), { returnCode: 0 }, 'an empty WILLTOPIC: no will')
  noWill.send({ type: 'disconnect' })

  // a will exchange left unfinished ends after mqtt.sn.idle_timeout
  await setting('mqtt.sn.idle_timeout', '1s')
  const idle = await sn()
  await idle.request({ type: 'connect', flags: flags({ will: true }), protocolId: 1, duration: 60, clientId: 'sn-idle' }, 'willtopicreq')
  t.match(await idle.next('connack'), { returnCode: 1 }, 'no WILLTOPIC: CONNACK congestion after the idle timeout')
  await setting('mqtt.sn.idle_timeout', '30s')
  await mqtt.publishAsync('will/marker', 'after', { qos: 1 })
  await got.next('will/marker')
  t.notOk(got.topics.includes('will/polite'), 'a DISCONNECT publishes no will')
  await mqtt.endAsync()
})

t.test('sleeping: DISCONNECT with a duration, messages buffered (bounded), delivered on the wake-up PINGREQ, then PINGRESP', async (t) => {
  const mqtt = await node.mqtt({ clientId: 'sleep-publisher', ...MQTT_USER })
  const client = await sn()
  t.equal(await client.connect('sn-sleeper'), 0)
  await client.subscribe('sleep/#', { qos: 2 })
  t.same(await client.request({ type: 'disconnect', duration: 5 }, 'disconnect'), { type: 'disconnect' })
  const asleepFrom = client.received.length
  await mqtt.publishAsync('sleep/a', 'zero', { qos: 0 })
  await mqtt.publishAsync('sleep/a', 'one', { qos: 1 })
  await mqtt.publishAsync('sleep/a', 'two', { qos: 2 })
  t.ok(await connection('sn-sleeper') !== undefined, 'still connected to the broker while asleep')
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.equal(client.received.length, asleepFrom, 'nothing sent to a sleeping client')
  await client.request({ type: 'pingreq', clientId: 'sn-sleeper' }, 'pingresp')
  const woke = client.received.slice(asleepFrom)
  t.same(woke.filter((p) => p.type === 'publish').map((p) => p.type === 'publish' && p.data.toString()), ['zero', 'one', 'two'], 'the buffered messages, in order')
  t.equal(woke.at(-1)?.type, 'pingresp', 'PINGRESP after them (their acknowledgements came first)')

  // the buffer's bound
  await setting('mqtt.sn.max_queue_len', '2')
  const dropped = await metric('mqttsn/messages/dropped')
  for (const n of [1, 2, 3, 4]) await mqtt.publishAsync('sleep/b', `q${n}`, { qos: 0 })
  await until('two over the bound dropped', async () => await metric('mqttsn/messages/dropped') === dropped + 2)
  const from = client.received.length
  await client.request({ type: 'pingreq', clientId: 'sn-sleeper' }, 'pingresp')
  t.same(client.received.slice(from).filter((p) => p.type === 'publish').map((p) => p.type === 'publish' && p.data.toString()), ['q1', 'q2'])
  await setting('mqtt.sn.max_queue_len', null)

  // a wrong client id wakes nothing; CONNECT makes it active again
  const stranger = client.received.length
  client.send({ type: 'pingreq', clientId: 'someone-else' })
  t.match(await client.request({ type: 'connect', flags: flags({ cleanSession: true }), protocolId: 1, duration: 60, clientId: 'sn-sleeper' }, 'connack'), { returnCode: 0 })
  t.notOk(client.received.slice(stranger).some((p) => p.type === 'pingresp'))
  await mqtt.publishAsync('sleep/c', 'awake again', { qos: 1 })
  await client.next('publish', (p) => p.data.toString() === 'awake again')

  // asleep past 1.5 x its duration: lost
  await client.request({ type: 'disconnect', duration: 1 }, 'disconnect')
  await until('a sleeper that never wakes is dropped', async () => await connection('sn-sleeper') === undefined)
  await mqtt.endAsync()
})

t.test('retransmission: an unacknowledged PUBLISH is sent again with DUP; after the retries the client is lost', async (t) => {
  const mqtt = await node.mqtt({ clientId: 'retry-publisher', ...MQTT_USER })
  const client = await sn()
  t.equal(await client.connect('sn-retry'), 0)
  const { topicId } = await client.subscribe('retry/t', { qos: 1 })
  client.autoAck = false
  await mqtt.publishAsync('retry/t', 'r1', { qos: 1 })
  const first = await client.next('publish')
  t.equal(first.flags.dup, false)
  const again = await client.next('publish', (p) => p.flags.dup)
  t.equal(again.msgId, first.msgId, 'the same message id, DUP set')
  client.send({ type: 'puback', topicId, msgId: first.msgId, returnCode: 0 })
  // QoS 2: PUBREC, then the gateway's PUBREL is sent again until PUBCOMP
  const qos2 = await client.subscribe('retry/two', { qos: 2 })
  t.equal(qos2.returnCode, 0)
  await mqtt.publishAsync('retry/two', 'exactly once', { qos: 2 })
  const two = await client.next('publish', (p) => p.data.toString() === 'exactly once')
  const relFrom = client.received.length
  client.send({ type: 'pubrec', msgId: two.msgId })
  await client.next('pubrel', (p) => p.msgId === two.msgId, relFrom)
  await client.next('pubrel', (p) => p.msgId === two.msgId, client.received.findIndex((p, i) => i >= relFrom && p.type === 'pubrel') + 1)
  client.send({ type: 'pubcomp', msgId: two.msgId })
  await mqtt.publishAsync('retry/t', 'r2', { qos: 1 })
  await client.next('publish', (p) => p.data.toString() === 'r2')
  // no PUBACK: 3 retries 300 ms apart, then the client is taken for lost
  await until('dropped after the retries', async () => await connection('sn-retry') === undefined)
  t.equal(client.publishes().filter((p) => p.data.toString() === 'r2').length, 4, 'sent once and three times again')
  await mqtt.endAsync()
})

t.test('auth: the gateway\'s user name and password go to the auth chain; a refusal is CONNACK "not supported"', async (t) => {
  await setting('mqtt.sn.password', 'wrong')
  const refused = await sn()
  t.equal(await refused.connect('sn-refused'), 3)
  t.equal(await connection('sn-refused'), undefined)
  await setting('mqtt.sn.password', 'snpass')
  t.equal(await refused.connect('sn-refused'), 0, 'the right password: accepted')
  refused.send({ type: 'disconnect' })

  t.equal((await node.http('POST', '/banned/', { who: 'sn-banned', as: 'client_id', reason: 'test' })).status, 200)
  const banned = await sn()
  t.equal(await banned.connect('sn-banned'), 3, 'a banned client id')
  t.equal((await node.http('DELETE', '/banned/sn-banned?as=client_id')).status, 200)
})

t.test('the ACL: a denied PUBLISH and a denied SUBSCRIBE are refused', async (t) => {
  const mqtt = await node.mqtt({ clientId: 'acl-watcher', ...MQTT_USER })
  await mqtt.subscribeAsync(['secret/#', 'open/#'], { qos: 1 })
  const got = inbox(mqtt)
  const client = await sn()
  t.equal(await client.connect('sn-acl'), 0)
  const secret = await client.register('secret/x')
  t.match(await client.publish(secret.topicId, 'no', { qos: 1 }), { type: 'puback', returnCode: 3 })
  t.match(await client.publish(secret.topicId, 'no', { qos: 2 }), { type: 'puback', returnCode: 3 }, 'QoS 2 refused with PUBACK')
  const open = await client.register('open/x')
  await client.publish(open.topicId, 'yes', { qos: 1 })
  await got.next('open/x')
  t.notOk(got.topics.includes('secret/x'), 'the denied message was not routed')
  t.match(await client.subscribe('private/#', { qos: 1 }), { returnCode: 3 })
  client.send({ type: 'disconnect' })
  await mqtt.endAsync()
})

t.test('kicked through the API: DISCONNECT to the client, counted on the listener; a takeover too', async (t) => {
  const client = await sn()
  t.equal(await client.connect('sn-kicked'), 0)
  const before = await listener()
  t.ok(before.current_conns >= 1)
  const from = client.received.length
  t.equal((await node.http('DELETE', '/connections/sn-kicked')).status, 200)
  await client.next('disconnect', () => true, from)
  await until('gone', async () => await connection('sn-kicked') === undefined)
  t.match(await listener(), { shutdown_count: { kicked: 1 } })

  const first = await sn()
  t.equal(await first.connect('sn-twice'), 0)
  const second = await sn()
  t.equal(await second.connect('sn-twice'), 0)
  await first.next('disconnect')
  t.match(await connection('sn-twice'), { port: second.localPort }, 'the second address holds the client id')
  second.send({ type: 'disconnect' })
})

t.test('subs_resume: a resumed session gets a REGISTER per subscribed topic name', async (t) => {
  const first = await sn()
  t.equal(await first.connect('sn-resume', { clean: false }), 0)
  await first.subscribe('resume/named', { qos: 1 })
  await first.subscribe('resume/wild/#', { qos: 1 })
  await first.request({ type: 'disconnect' }, 'disconnect')
  const second = await sn()
  t.equal(await second.connect('sn-resume', { clean: false }), 0)
  const register = await second.next('register')
  t.equal(register.topicName, 'resume/named', 'the topic name; not the wildcard filter')
  await new Promise((resolve) => setTimeout(resolve, 200))
  t.equal(second.received.filter((p) => p.type === 'register').length, 1)
  await second.request({ type: 'disconnect' }, 'disconnect')
  await node.http('DELETE', '/sessions/sn-resume')
})

t.test('malformed and oversized datagrams are dropped and counted; a flood of SEARCHGW and of CONNECT is bounded', async (t) => {
  const client = await sn()
  t.equal(await client.connect('sn-robust'), 0)
  const malformed = await metric('mqttsn/packets/malformed')
  const tooLarge = await metric('mqttsn/packets/too_large')
  client.raw(Buffer.from([0x05, 0x0c, 0x00]))                 // says 5, has 3
  client.raw(Buffer.from([0x02, 0x03]))                       // no such type
  client.raw(Buffer.from([0x01]))                             // cut short
  client.raw(Buffer.from('GET / HTTP/1.1\r\n\r\n'))
  client.raw(Buffer.alloc(1500, 0x41))                        // over mqtt.sn.max_packet_size (1024)
  await until('counted', async () => await metric('mqttsn/packets/malformed') === malformed + 4 && await metric('mqttsn/packets/too_large') === tooLarge + 1)
  t.equal((await client.request({ type: 'pingreq' }, 'pingresp')).type, 'pingresp', 'the client is still served')

  // one client registering 1100 topics at once: 1000 ids, then REGACK 0x03
  const registrar = await sn()
  t.equal(await registrar.connect('sn-registrar'), 0)
  // in rounds of 100 (no datagram lost to a full receive buffer, whatever the OS's size)
  for (let round = 0; round < 11; round++) {
    for (let i = round * 100; i < (round + 1) * 100; i++) registrar.send({ type: 'register', topicId: 0, msgId: i + 1, topicName: `many/${i}` })
    await until(`${(round + 1) * 100} REGACKs`, () => registrar.received.filter((p) => p.type === 'regack').length === (round + 1) * 100)
  }
  const regacks = registrar.received.filter((p) => p.type === 'regack')
  t.equal(regacks.filter((p) => p.type === 'regack' && p.returnCode === 0).length, 1000, 'at most 1000 topic ids per client')
  t.equal(regacks.filter((p) => p.type === 'regack' && p.returnCode === 3).length, 100)
  registrar.send({ type: 'disconnect' })

  const flooder = await sn()
  const before = (await listener()).current_conns
  const dropped = await metric('mqttsn/packets/dropped')
  const searchgw = encode({ type: 'searchgw', radius: 0 })
  for (let i = 0; i < 2000; i++) flooder.raw(searchgw)
  await until('the flood is read', async () => await metric('mqttsn/packets/dropped') > dropped)
  await new Promise((resolve) => setTimeout(resolve, 300))
  const answers = flooder.received.filter((p) => p.type === 'gwinfo').length
  t.ok(answers > 0 && answers < 1000, `GWINFO answers bounded (${answers} for 2000 SEARCHGW)`)
  t.equal((await listener()).current_conns, before, 'no state for SEARCHGW')

  await setting('mqtt.sn.max_connections', String(before + 2))
  const many = await Promise.all([1, 2, 3, 4].map(async () => await sn()))
  const codes = await Promise.all(many.map(async (c, i) => await c.connect(`sn-many-${i}`)))
  t.same(codes.slice().sort(), [0, 0, 1, 1], 'over max_connections: CONNACK congestion')
  await setting('mqtt.sn.max_connections', null)
  for (const c of many) c.send({ type: 'disconnect' })
  client.send({ type: 'disconnect' })
})

t.test('unloaded through the API: its clients get DISCONNECT and its listener goes; loaded again it serves', async (t) => {
  const client = await sn()
  t.equal(await client.connect('sn-unload'), 0)
  const from = client.received.length
  t.equal((await node.http('PUT', `/nodes/${node.node.name}/plugins/broker_sn/unload`)).status, 200)
  await client.next('disconnect', () => true, from)
  const { body } = await node.http('GET', `/nodes/${node.node.name}/listeners`)
  t.notOk((body as Listener[]).some((l) => l.protocol === 'mqtt-sn:udp'), 'no mqtt-sn:udp listener')
  await until('no MQTT-SN client left', async () => await connection('sn-unload') === undefined)
  t.equal((await node.http('PUT', `/nodes/${node.node.name}/plugins/broker_sn/load`)).status, 200)
  port = Number((await listener()).listen_on.split(':')[1])
  const again = await sn()
  t.equal(await again.connect('sn-unload'), 0)
  again.send({ type: 'disconnect' })
})
