// $SYS topics (SPEC §6) with real clients: the periodic broker topics, stats
// and metrics, who may subscribe, presence messages, the interval changed at
// run time, and the broker/node info the management API serves (§2.7, §2.8).
import { rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import type { ISubackPacket } from 'mqtt-packet'
import { METRIC_KEYS } from '../lib/metrics/metrics.js'
import { STAT_NAMES } from '../lib/metrics/stats.js'
import { VERSION, uptimeText } from '../lib/sys/node-info.js'
import { startBroker, tempDir, type TestBroker } from './helpers/broker.js'
import { closeAll, connect, nextMessages, noMessageWithin, type MqttClient, type Received } from './helpers/mqtt.js'
import { RawClient } from './helpers/raw-client.js'

interface Test { teardown: (fn: () => unknown) => void }
const NODE = 'broker@127.0.0.1'
const PREFIX = `$SYS/brokers/${NODE}/`
const DATETIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/
const UPTIME = /^(\d+ days, )?(\d+ hours, )?(\d+ minutes, )?\d+ seconds$/

async function broker (t: Test, settings: Record<string, string | number> = {}): Promise<TestBroker> {
  // presence notices are broker_modules', retained messages broker_retainer's (both loaded by default on a new install)
  const b = await startBroker(settings, ['tcp'], undefined, { plugins: { broker_retainer: {}, broker_modules: {} } })
  t.teardown(b.stop)
  return b
}

async function client (t: Test, b: TestBroker, clientId: string, options: Record<string, unknown> = {}): Promise<MqttClient> {
  const c = await connect(`mqtt://127.0.0.1:${b.port()}`, { clientId, ...options })
  t.teardown(() => closeAll(c))
  return c
}

/** The distinct topics of the messages (overlapping filters each bring a retained copy). */
const topics = (messages: Received[]): string[] => [...new Set(messages.map((m) => m.topic))].sort()

/**
 * Every message arriving until each of `expected` has come (a generous
 * deadline for a loaded machine), and then for `settleMs` more: a message the
 * filters should not bring has had its chance to come too.
 */
async function collectUntil (c: MqttClient, expected: string[], settleMs = 300, ms = 10_000): Promise<Received[]> {
  const got: Received[] = []
  const onMessage = (topic: string, payload: Buffer, packet: { retain: boolean, qos: number }): void => {
    got.push({ topic, payload: payload.toString(), retain: packet.retain, qos: packet.qos })
  }
  c.on('message', onMessage)
  const deadline = Date.now() + ms
  while (!expected.every((topic) => got.some((m) => m.topic === topic)) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  await new Promise((resolve) => setTimeout(resolve, settleMs))
  c.off('message', onMessage)
  return got
}

/** Every message arriving within `ms`. */
async function collect (c: MqttClient, ms: number): Promise<Received[]> {
  const got: Received[] = []
  const onMessage = (topic: string, payload: Buffer, packet: { retain: boolean, qos: number }): void => {
    got.push({ topic, payload: payload.toString(), retain: packet.retain, qos: packet.qos })
  }
  c.on('message', onMessage)
  await new Promise((resolve) => setTimeout(resolve, ms))
  c.off('message', onMessage)
  return got
}

t.test('every $SYS topic arrives with its payload shape, QoS and retain flag', async (t) => {
  const b = await broker(t, { 'broker.sys_interval': '1s' })
  const watcher = await client(t, b, 'sys-watcher')
  const granted = await watcher.subscribeAsync('$SYS/#', { qos: 0 })
  t.equal(granted[0].qos, 0, 'a local client may subscribe to $SYS/#')
  const got = await collect(watcher, 2300)
  const last = new Map(got.map((m) => [m.topic, m]))

  t.equal(last.get('$SYS/brokers')?.payload, NODE, '$SYS/brokers lists the node names')
  t.equal(last.get(`${PREFIX}version`)?.payload, VERSION, 'version')
  t.equal(last.get(`${PREFIX}sysdescr`)?.payload, 'MQTT Broker', 'sysdescr')
  t.match(last.get(`${PREFIX}uptime`)?.payload, UPTIME, 'uptime in EMQ X words')
  t.match(last.get(`${PREFIX}datetime`)?.payload, DATETIME, 'datetime')
  for (const topic of ['$SYS/brokers', `${PREFIX}version`, `${PREFIX}sysdescr`]) {
    t.ok(got.some((m) => m.topic === topic && m.retain), `${topic} is retained (delivered as retained on subscribe)`)
  }
  for (const topic of [`${PREFIX}uptime`, `${PREFIX}datetime`]) {
    t.ok(got.filter((m) => m.topic === topic).length >= 2, `${topic} every second`)
    t.notOk(got.some((m) => m.topic === topic && m.retain), `${topic} is not retained`)
  }
  for (const name of STAT_NAMES) {
    for (const key of [`${name}/count`, `${name}/max`]) {
      const m = last.get(`${PREFIX}stats/${key}`)
      t.match(m?.payload, /^\d+$/, `stats/${key} is decimal text`)
      t.equal(m?.retain, false, `stats/${key} not retained`)
    }
  }
  for (const key of METRIC_KEYS) {
    const m = last.get(`${PREFIX}metrics/${key}`)
    t.match(m?.payload, /^\d+$/, `metrics/${key} is decimal text`)
    t.equal(m?.retain, false, `metrics/${key} not retained`)
  }
  t.equal(last.get(`${PREFIX}stats/connections/count`)?.payload, '1', 'the watcher is connected')
  t.ok(got.every((m) => m.qos === 0), 'QoS 0')
  t.same(got.filter((m) => !m.topic.startsWith('$SYS/brokers')).map((m) => m.topic), [],
    'none of the engine\'s own $SYS/<id>/… notices reach clients')
})

t.test('retained $SYS messages reach $SYS/# but never a filter starting with a wildcard [MQTT-4.7.2-1]', async (t) => {
  const b = await broker(t)
  const sys = await client(t, b, 'sys-all')
  // keyed on the three arriving (a loaded machine may take longer than a fixed window), then a pause for any other
  const retained = collectUntil(sys, ['$SYS/brokers', `${PREFIX}sysdescr`, `${PREFIX}version`])
  await sys.subscribeAsync('$SYS/#', { qos: 0 })
  t.same(topics((await retained).filter((m) => m.retain)), ['$SYS/brokers', `${PREFIX}sysdescr`, `${PREFIX}version`],
    'the retained $SYS topics are stored')
  await sys.publishAsync('plain/r', 'kept', { qos: 1, retain: true })
  for (const filter of ['#', '+/brokers/#', '+/+']) {
    const c = await client(t, b, `wild-${filter}`)
    const got = collectUntil(c, ['plain/r'])
    await c.subscribeAsync([filter, 'plain/r'], { qos: 0 })
    t.same(topics(await got), ['plain/r'], `${filter}: only the client's retained message`)
  }
  const mixed = await client(t, b, 'mixed')
  const got = collectUntil(mixed, [`${PREFIX}version`, 'plain/r'])
  await mixed.subscribeAsync(['#', `${PREFIX}version`], { qos: 0 })
  t.same(topics(await got), [`${PREFIX}version`, 'plain/r'], 'a $ topic its literal filter matches still comes')
})

t.test('a client the ACL denies gets SUBACK 0x80 for $SYS/#', async (t) => {
  const dir = await tempDir()
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const acl = join(dir, 'acl.conf')
  await writeFile(acl, '{allow, {user, "dashboard"}, subscribe, ["$SYS/#"]}.\n{deny, all, subscribe, ["$SYS/#"]}.\n{allow, all}.\n')
  const b = await broker(t, { 'mqtt.acl_file': acl })
  for (const [username, expected] of [[undefined, 0x80], ['dashboard', 0]] as const) {
    const raw = await RawClient.open(b.port(), 4)
    t.teardown(() => raw.end())
    await raw.connect({ clientId: `who-${username ?? 'anon'}`, username })
    raw.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: '$SYS/#', qos: 0 }] })
    t.same((await raw.next('suback') as ISubackPacket).granted, [expected], `${username ?? 'anonymous'}: ${expected}`)
  }
})

t.test('presence: connected and disconnected, exact fields, QoS 1, not retained', async (t) => {
  const b = await broker(t, { 'broker.sys_interval': '1h' })
  const watcher = await client(t, b, 'presence-watcher')
  // only the clients below: the watcher's own `connected` may still be on its way
  await watcher.subscribeAsync(['alice', 'bob', 'carol', 'dave'].map((id) => `${PREFIX}clients/${id}/#`), { qos: 1 })

  let got = nextMessages(watcher, 1)
  const before = Date.now()
  const alice = await connect(`mqtt://127.0.0.1:${b.port()}`, { clientId: 'alice', username: 'al', clean: false, keepalive: 42 })
  t.teardown(() => closeAll(alice))
  let [m] = await got
  t.equal(m.topic, `${PREFIX}clients/alice/connected`)
  t.equal(m.qos, 1, 'QoS 1')
  t.equal(m.retain, false, 'not retained')
  const connected = JSON.parse(m.payload) as Record<string, unknown>
  t.same(Object.keys(connected).sort(), ['clean_start', 'clientid', 'connack', 'ipaddress', 'keepalive', 'proto_name', 'proto_ver', 'ts', 'username'])
  t.match(connected, { clientid: 'alice', username: 'al', ipaddress: '127.0.0.1', clean_start: false, proto_ver: 4, proto_name: 'MQTT', keepalive: 42, connack: 0 })
  t.ok((connected.ts as number) >= before && (connected.ts as number) <= Date.now(), 'ts in milliseconds')

  got = nextMessages(watcher, 1)
  await alice.endAsync()
  ;[m] = await got
  t.equal(m.topic, `${PREFIX}clients/alice/disconnected`)
  t.equal(m.qos, 1)
  const gone = JSON.parse(m.payload) as Record<string, unknown>
  t.same(Object.keys(gone).sort(), ['clientid', 'reason', 'ts', 'username'])
  t.match(gone, { clientid: 'alice', username: 'al', reason: 'normal' })

  got = nextMessages(watcher, 2)
  const raw = await RawClient.open(b.port(), 5)
  await raw.connect({ clientId: 'bob', keepalive: 0 })
  raw.end() // no DISCONNECT: the socket just closes
  const [up, down] = await got
  t.match(JSON.parse(up.payload), { clientid: 'bob', username: 'undefined', proto_ver: 5, proto_name: 'MQTT', clean_start: true, keepalive: 0 },
    'no user name: the string "undefined"')
  t.match(JSON.parse(down.payload), { clientid: 'bob', username: 'undefined', reason: 'closed' })

  await b.node.service.setPluginSettings('broker_modules', { 'module.presence.format': 'short' })
  got = nextMessages(watcher, 1)
  const carol = await connect(`mqtt://127.0.0.1:${b.port()}`, { clientId: 'carol', protocolVersion: 5 })
  t.teardown(() => closeAll(carol))
  const short = JSON.parse((await got)[0].payload) as Record<string, unknown>
  t.same(Object.keys(short).sort(), ['clientid', 'connack', 'ipaddress', 'session', 'ts', 'username', 'version'], 'the short variant')
  t.match(short, { clientid: 'carol', session: false, version: 5, connack: 0 })

  await b.node.service.setPluginSettings('broker_modules', { 'module.presence': 'false' })
  const quiet = noMessageWithin(watcher, 500)
  const dave = await connect(`mqtt://127.0.0.1:${b.port()}`, { clientId: 'dave' })
  await closeAll(dave)
  t.ok(await quiet, 'module.presence = false: no presence messages')
})

t.test('broker.sys_interval changed at run time takes effect without a restart', async (t) => {
  const b = await broker(t, { 'broker.sys_interval': '1h' })
  const watcher = await client(t, b, 'interval-watcher')
  await watcher.subscribeAsync(`${PREFIX}stats/connections/count`, { qos: 0 })
  t.ok(await noMessageWithin(watcher, 1200), 'hourly: nothing within a second')
  const started = Date.now()
  b.node.config.set('broker.sys_interval', '1s')
  const [m] = await nextMessages(watcher, 1, 2500)
  t.equal(m.payload, '1')
  t.ok(Date.now() - started < 2000, 'within the new interval')
  b.node.config.set('broker.sys_interval', '0')
  await new Promise((resolve) => setTimeout(resolve, 50))
  t.ok(await noMessageWithin(watcher, 1500), '0 switches it off')
})

t.test('broker info (§2.7) and node statistics (§2.8)', async (t) => {
  const b = await broker(t)
  await client(t, b, 'info')
  const obs = b.node.observability
  const info = obs.brokerInfo()
  t.same(Object.keys(info).sort(), ['datetime', 'node_status', 'otp_release', 'sysdescr', 'uptime', 'version'])
  t.match(info, { node_status: 'Running', otp_release: `Node.js ${process.version}`, version: VERSION, sysdescr: 'MQTT Broker' })
  t.match(info.datetime, DATETIME)
  t.match(info.uptime, UPTIME)
  const stats = await obs.nodeStats()
  t.same(Object.keys(stats).sort(), ['connections', 'load1', 'load15', 'load5', 'max_fds', 'memory_total', 'memory_used', 'name',
    'node_status', 'otp_release', 'process_available', 'process_used', 'uptime', 'version'])
  t.match(stats, { connections: 1, name: NODE, node_status: 'Running', version: VERSION })
  for (const load of [stats.load1, stats.load5, stats.load15]) t.match(load, /^\d+\.\d{2}$/, 'load: two decimals')
  t.ok(stats.max_fds > 0 && stats.process_available === stats.max_fds, 'process_available: the descriptor limit')
  t.ok(stats.process_used > 0 && stats.process_used < stats.max_fds, 'process_used: descriptors open')
  t.ok(stats.memory_total > 0 && stats.memory_used > 0, 'memory in bytes')
})

t.test('uptime text, as EMQ X writes it', async (t) => {
  t.equal(uptimeText(0), '0 seconds')
  t.equal(uptimeText(5_999), '5 seconds')
  t.equal(uptimeText(125_000), '2 minutes, 5 seconds')
  t.equal(uptimeText(3_605_000), '1 hours, 0 minutes, 5 seconds')
  t.equal(uptimeText(((3 * 24 + 1) * 3600 + 7) * 1000), '3 days, 1 hours, 0 minutes, 7 seconds')
})
