// Settings say whether they applied (issue 15 #14): every setting has a kind
// (live, restart, fixed) shown by the API; live ones take effect on the running
// node — observed here with real clients —, restart ones are refused unless
// stored for the next start, fixed ones are refused.
import { readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import mqttPacket from 'mqtt-packet'
import { OVERRIDE_FILE, changeSetting, loadConfig, nodeSettingsSchema as schema } from '../../../lib/plugin-kit/admin.js'
import { tempDir } from '../../../test/helpers/broker.js'
import { closeAll, connect, nextMessages } from '../../../test/helpers/mqtt.js'
import { RawClient } from '../../../test/helpers/raw-client.js'
import { startApiNode, type ApiNode } from './api.js'

let api: ApiNode
t.before(async () => { api = await startApiNode() })
t.teardown(async () => await api.stop())

const put = async (key: string, value: string, extra: Record<string, unknown> = {}): Promise<{ status: number, body: unknown }> =>
  await api.call('PUT', '/configs/broker', { body: { key, value, ...extra } })

t.test('the config listing shows each setting\'s kind', async (t) => {
  const items = (await api.call('GET', `/nodes/${api.broker.node.name}/configs/`)).body as Array<{ key: string, kind: string }>
  const kinds = new Map(items.map((i) => [i.key, i.kind]))
  t.equal(kinds.size, Object.keys(schema).length, 'every setting is listed')
  t.ok(items.every((i) => ['live', 'restart', 'fixed'].includes(i.kind)), 'every setting has one kind')
  t.equal(kinds.get('node.name'), 'fixed')
  t.equal(kinds.get('node.data_dir'), 'fixed')
  t.equal(kinds.get('cluster.discovery'), 'restart')
  t.equal(kinds.get('listener.tcp.external'), 'restart')
  for (const key of ['mqtt.max_packet_size', 'zone.external.max_inflight', 'zone.external.max_qos_allowed', 'listener.tcp.external.max_connections']) {
    t.equal(kinds.get(key), 'live', `${key} is live`)
  }
})

t.test('fixed and restart settings are refused at run time, naming the kind', async (t) => {
  const name = await put('node.name', 'other@127.0.0.1')
  t.equal(name.status, 400)
  t.match(name.body, { message: /node.name is fixed/ })
  t.equal(api.broker.node.name, 'broker@127.0.0.1', 'the node keeps its name')

  const discovery = await put('cluster.discovery', 'redis')
  t.equal(discovery.status, 400)
  t.match(discovery.body, { message: /takes effect at the next start \(kind restart\)/ })
  t.equal(api.broker.node.config.get('cluster.discovery'), 'manual')

  const listener = await put('listener.tcp.external', '127.0.0.1:1')
  t.equal(listener.status, 400, 'a listener address is refused too')
})

t.test('a restart setting is stored for the next start when the request says so', async (t) => {
  // an embedded node (no install root) keeps no overrides: it says so
  const embedded = await put('log.file.max_count', '7', { next_start: true })
  t.equal(embedded.status, 400)
  t.match(embedded.body, { message: /keeps no runtime overrides/ })

  const dir = await tempDir()
  t.teardown(async () => await rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'broker.conf')
  await writeFile(file, `node.data_dir = ${dir}\n`)
  const config = await loadConfig({ file, root: '/' })
  changeSetting(config, 'log.file.max_count', '7', 'test', true)
  t.equal(config.get('log.file.max_count'), 5, 'the running value is unchanged')
  t.match(await readFile(join(dir, OVERRIDE_FILE), 'utf8'), /^log\.file\.max_count = 7$/m, 'kept for the next start')
  t.equal((await loadConfig({ file, root: '/' })).get('log.file.max_count'), 7, 'in force at the next start')
  t.throws(() => changeSetting(config, 'log.file.max_count', '8', 'test'), { name: 'SettingKindError' }, 'refused without next_start')
  t.throws(() => changeSetting(config, 'node.name', 'x@y', 'test', true), { name: 'SettingKindError', message: /fixed/ }, 'a fixed setting even with next_start')
})

t.test('mqtt.max_packet_size is live: a larger packet is refused after the change', async (t) => {
  const before = await RawClient.open(api.broker.port(), 5)
  t.teardown(() => before.end())
  t.equal((await before.connect({ clientId: 'size-before' })).properties?.maximumPacketSize, 1024 * 1024)
  t.equal((await put('mqtt.max_packet_size', '2KB')).body, 'ok')
  t.teardown(async () => await put('mqtt.max_packet_size', '1MB'))
  const after = await RawClient.open(api.broker.port(), 5)
  t.teardown(() => after.end())
  t.equal((await after.connect({ clientId: 'size-after' })).properties?.maximumPacketSize, 2048, 'CONNACK advertises the new size')
  after.send({ cmd: 'publish', topic: 'big', payload: Buffer.alloc(4096), qos: 0, retain: false, dup: false } as mqttPacket.IPublishPacket)
  const disconnect = await after.next('disconnect', 10_000) as mqttPacket.IDisconnectPacket
  t.equal(disconnect.reasonCode, 0x95, 'packet too large')
})

t.test('zone.external.max_qos_allowed is live: the next CONNACK says it and a subscription is downgraded', async (t) => {
  t.equal((await put('zone.external.max_qos_allowed', '1')).body, 'ok')
  t.teardown(async () => await put('zone.external.max_qos_allowed', '2'))
  const raw = await RawClient.open(api.broker.port(), 5)
  t.teardown(() => raw.end())
  t.equal((await raw.connect({ clientId: 'qos-after' })).properties?.maximumQoS, 1, 'Maximum QoS 1 advertised')
  const sub = await connect(api.mqttUrl, { clientId: 'qos-sub', protocolVersion: 5 })
  t.teardown(() => closeAll(sub))
  const granted = await sub.subscribeAsync('q/#', { qos: 2 })
  t.equal(granted[0].qos, 1, 'QoS 2 subscription granted as 1')
})

t.test('zone.external.max_inflight is live: a subscriber that does not acknowledge gets only that many', async (t) => {
  t.equal((await put('zone.external.max_inflight', '2')).body, 'ok')
  t.teardown(async () => await put('zone.external.max_inflight', '32'))
  const slow = await RawClient.open(api.broker.port(), 4)
  t.teardown(() => slow.end())
  await slow.connect({ clientId: 'slow' })
  slow.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'w/#', qos: 1 }] } as mqttPacket.ISubscribePacket)
  await slow.next('suback')
  const pub = await connect(api.mqttUrl, { clientId: 'window-pub' })
  t.teardown(() => closeAll(pub))
  for (let i = 0; i < 5; i++) await pub.publishAsync('w/x', String(i), { qos: 1 })
  await slow.next('publish')
  await slow.next('publish')
  await t.rejects(slow.next('publish', 1500), /timed out/, 'the third waits for an acknowledgement')
})

t.test('listener max_connections is live for new connections; those connected stay', async (t) => {
  const first = await connect(api.mqttUrl, { clientId: 'conn-1' })
  t.teardown(() => closeAll(first))
  const connected = api.broker.node.listeners[0].gate.counters.current
  t.equal((await put('listener.tcp.external.max_connections', String(connected))).body, 'ok')
  t.teardown(async () => await put('listener.tcp.external.max_connections', '1024000'))
  const refused = await RawClient.open(api.broker.port(), 5)
  t.teardown(() => refused.end())
  const connack = await refused.connect({ clientId: 'conn-over' })
  t.equal(connack.reasonCode, 0x97, 'over the new limit: quota exceeded')
  const echo = nextMessages(first, 1)
  await first.subscribeAsync('still/here')
  await first.publishAsync('still/here', 'yes')
  t.equal((await echo)[0].payload, 'yes', 'the connected client is untouched')
})
