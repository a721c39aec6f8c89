// The plugin over its life, on real nodes: unloaded and loaded again through
// the management API (unloaded, the retain flag is ignored as in EMQ X), its
// settings through the configuration API (live limits, a storage switch from
// ram to disc and on with no message lost), a bad value refused with file and
// line, restarts (a clean stop for every type; kill -9 of a real process),
// a store read back with damaged, expired and oversized entries in it, and
// the retained messages an older install kept in the engine's store handed over.
import { rm } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { Level } from 'level'
import t, { type Test } from 'tap'
import { startPluginNode, tempDir, type PluginNode } from '../../../lib/plugin-kit/testing.js'
import { spawnBroker, writePluginFiles, type BrokerProcess } from '../../../test/helpers/broker.js'
import { closeAll, connect, nextMessages, noMessageWithin, type Received } from '../../../test/helpers/mqtt.js'
import { encode } from '../codec.js'

const PLUGIN = 'broker_retainer'
const NOTHING_MS = 500

/** The payloads a new subscriber to `filter` gets on SUBSCRIBE (`count` of them, then nothing more), sorted. */
async function retained (t: Test, node: PluginNode, filter: string, count: number): Promise<string[]> {
  const client = await node.mqtt({ clientId: `sub-${Math.random().toString(36).slice(2)}` })
  t.teardown(async () => await closeAll(client))
  const got: Promise<Received[]> = count > 0 ? nextMessages(client, count) : Promise.resolve([])
  await client.subscribeAsync(filter, { qos: 1 })
  const messages = await got
  t.ok(await noMessageWithin(client, NOTHING_MS), `${filter}: ${count} and no more`)
  await client.endAsync()
  t.ok(messages.every((m) => m.retain), 'all with retain=1')
  return messages.map((m) => `${m.topic}=${m.payload}`).sort()
}

async function publishRetained (node: PluginNode, messages: Record<string, string>): Promise<void> {
  const pub = await node.mqtt({ clientId: `pub-${Math.random().toString(36).slice(2)}` })
  for (const [topic, payload] of Object.entries(messages)) await pub.publishAsync(topic, payload, { qos: 1, retain: true })
  await pub.endAsync()
}

/** The node's store (LevelDB) while no node runs on it. */
async function withStore (dataDir: string, work: (db: Level<string, string>) => Promise<void>): Promise<void> {
  const db = new Level<string, string>(join(dataDir, 'store'))
  await db.open()
  try {
    await work(db)
  } finally {
    await db.close()
  }
}

const retainerSection = (db: Level<string, string>) => db.sublevel<string, string>(`plugin_${PLUGIN}`, { valueEncoding: 'utf8' })

t.test('unloaded through the API the retain flag is ignored; loaded again, what was kept is back', async (t) => {
  const node = await startPluginNode({ plugin: PLUGIN, withApi: true })
  t.teardown(node.stop)
  const path = (action: string): string => `/nodes/${node.node.name}/plugins/${PLUGIN}/${action}`
  const metric = (): number => node.node.observability.metricsV3()['messages/retained']
  await publishRetained(node, { 'l/kept': 'before' })
  t.same(await retained(t, node, 'l/#', 1), ['l/kept=before'])

  t.equal((await node.http('PUT', path('unload'))).status, 200)
  t.equal(node.node.plugins.registrations(PLUGIN), 0, 'nothing of it left')
  t.equal(node.node.commands.get('retainer'), undefined, 'its ctl command is gone')
  t.equal(node.node.retained.keeper, undefined)
  t.same(await retained(t, node, 'l/#', 0), [], 'nothing sent on SUBSCRIBE')
  const live = await node.mqtt({ clientId: 'live' })
  t.teardown(async () => await closeAll(live))
  await live.subscribeAsync('l/#', { qos: 1 })
  const delivered = nextMessages(live, 1)
  const before = metric()
  await publishRetained(node, { 'l/while-unloaded': 'delivered, not kept' })
  t.match(await delivered, [{ topic: 'l/while-unloaded', payload: 'delivered, not kept' }], 'still delivered to subscribers')
  t.equal(metric(), before, 'messages/retained does not count it')
  t.equal(node.node.observability.statsV3()['retained/count'], 0)

  t.equal((await node.http('PUT', path('load'))).status, 200)
  t.same(await retained(t, node, 'l/#', 1), ['l/kept=before'], 'the message kept on disc is back; the one published while unloaded was never kept')
  t.equal(node.node.observability.statsV3()['retained/count'], 1)
  t.match(await node.http('PUT', path('load')), { status: 503, body: { message: 'already_started' } }, 'loaded already')
})

t.test('the configuration API: retainer.* under app broker_retainer; limits change live; a bad value is refused', async (t) => {
  const node = await startPluginNode({ plugin: PLUGIN, withApi: true })
  t.teardown(node.stop)
  const items = (await node.http('GET', `/nodes/${node.node.name}/configs/`)).body as Array<{ key: string, value: string, datatpye: string, app: string }>
  t.same(items.filter((i) => i.app === PLUGIN).map((i) => [i.key, i.value, i.datatpye]).sort(), [
    ['retainer.expiry_interval', '0', 'duration'],
    ['retainer.max_payload_size', '1048576', 'bytesize'],
    ['retainer.max_retained_messages', '0', 'integer'],
    ['retainer.storage_type', 'disc', 'enum']
  ])
  const loadsBefore = node.node.plugins.registrations(PLUGIN)
  t.match(await node.http('PUT', '/configs/broker_retainer', { key: 'retainer.max_retained_messages', value: '2' }), { status: 200 })
  t.match(await node.http('PUT', '/configs/broker_retainer', { key: 'retainer.max_payload_size', value: '4KB' }), { status: 200 })
  t.equal(node.node.plugins.registrations(PLUGIN), loadsBefore, 'live: no reload')
  await publishRetained(node, { 'c/1': '1', 'c/2': '2', 'c/3': 'over the limit', 'c/big': 'x'.repeat(4097) })
  t.same(await retained(t, node, 'c/#', 2), ['c/1=1', 'c/2=2'])
  const shown = (await node.http('GET', `/nodes/${node.node.name}/configs/`)).body as Array<{ key: string, value: string }>
  t.equal(shown.find((i) => i.key === 'retainer.max_payload_size')?.value, '4096')

  t.match(await node.http('PUT', '/configs/broker_retainer', { key: 'retainer.storage_type', value: 'tape' }), { status: 400, body: { message: /retainer\.storage_type/ } })
  t.match(await node.http('PUT', '/configs/broker_retainer', { key: 'retainer.max_payload_size', value: 'lots' }), { status: 400, body: { message: /retainer\.max_payload_size/ } })
  t.match(await node.http('PUT', '/configs/broker_retainer', { key: 'retainer.expiry_interval', value: '-1' }), { status: 400 })
  t.match(await node.http('PUT', '/configs/broker_retainer', { key: 'mqtt.allow_anonymous', value: 'false' }), { status: 404 }, 'not a key of this app')
  t.match(await node.http('PUT', '/configs/broker', { key: 'retainer.max_payload_size', value: '1' }), { status: 404 }, 'not the node\'s')
  t.same(await retained(t, node, 'c/#', 2), ['c/1=1', 'c/2=2'], 'the refusals changed nothing')
})

t.test('a bad value in etc/plugins/broker_retainer.conf is refused with its file and line', async (t) => {
  await t.rejects(startPluginNode({ plugin: PLUGIN, settings: { 'retainer.storage_type': 'tape' } }), /broker_retainer\.conf:1: retainer\.storage_type: /)
  await t.rejects(startPluginNode({ plugin: PLUGIN, settings: { 'retainer.max_retained_messages': 10, 'retainer.max_payload_size': '12 parsecs' } }), /broker_retainer\.conf:2: retainer\.max_payload_size: /)
  await t.rejects(startPluginNode({ plugin: PLUGIN, settings: { 'retainer.expiry_interval': '9999999999' } }), /broker_retainer\.conf:1: retainer\.expiry_interval: .*4294967295s/)
  await t.rejects(startPluginNode({ plugin: PLUGIN, settings: { 'retainer.nothing': 1 } }), /broker_retainer\.conf:1: retainer\.nothing/)
})

t.test('ram → disc → disc_only → ram: a storage switch through the API loses nothing, nor does a restart', async (t) => {
  const dataDir = await tempDir()
  t.teardown(async () => await rm(dataDir, { recursive: true, force: true }))
  let node = await startPluginNode({ plugin: PLUGIN, settings: { 'retainer.storage_type': 'ram' }, withApi: true, dataDir })
  const kept = { 's/1': 'one', 's/2': 'two', 's/3': 'three' }
  await publishRetained(node, kept)
  const expected = Object.entries(kept).map(([k, v]) => `${k}=${v}`)
  for (const type of ['disc', 'disc_only', 'ram', 'disc']) {
    t.match(await node.http('PUT', `/nodes/${node.node.name}/plugin_configs/${PLUGIN}`, { 'retainer.storage_type': type }), { status: 200 })
    t.same(await retained(t, node, 's/#', 3), expected, `after the switch to ${type}`)
  }
  await publishRetained(node, { 's/2': '' })
  await node.stop()
  node = await startPluginNode({ plugin: PLUGIN, settings: { 'retainer.storage_type': 'ram' }, withApi: true, dataDir })
  t.teardown(node.stop)
  t.same(await retained(t, node, 's/#', 2), ['s/1=one', 's/3=three'], 'a restart (the override file says disc, over ram in etc/): kept, the cleared one gone')
})

for (const type of ['ram', 'disc', 'disc_only'] as const) {
  t.test(`${type}: a clean stop and a start keep every retained message`, async (t) => {
    const dataDir = await tempDir()
    t.teardown(async () => await rm(dataDir, { recursive: true, force: true }))
    const settings = { 'retainer.storage_type': type }
    const first = await startPluginNode({ plugin: PLUGIN, settings, dataDir })
    await publishRetained(first, { 'r/a': 'a', 'r/b': 'b' })
    await first.stop()
    const second = await startPluginNode({ plugin: PLUGIN, settings, dataDir })
    t.teardown(second.stop)
    t.same(await retained(t, second, 'r/+', 2), ['r/a=a', 'r/b=b'])
    t.equal(second.node.observability.statsV3()['retained/count'], 2)
  })
}

t.test('read back at start: damaged, expired and oversized entries are skipped and removed, never a crash', async (t) => {
  const dataDir = await tempDir()
  t.teardown(async () => await rm(dataDir, { recursive: true, force: true }))
  const first = await startPluginNode({ plugin: PLUGIN, dataDir })
  await publishRetained(first, { 'ok/1': 'one', 'ok/2': 'two' })
  await first.stop()
  const damaged = ['bad/json', 'bad/+wild', 'bad/fields', 'old', 'big']
  await withStore(dataDir, async (db) => {
    const section = retainerSection(db)
    await section.put('bad/json', '{"q":1,"p":')
    await section.put('bad/+wild', encode({ topic: 'x', payload: Buffer.from('x'), qos: 0 }))
    await section.put('bad/fields', '{"q":7,"p":"eA=="}')
    await section.put('old', encode({ topic: 'old', payload: Buffer.from('expired'), qos: 1, expiresAt: Date.now() - 1000 }))
    await section.put('big', encode({ topic: 'big', payload: Buffer.alloc(2048), qos: 1 }))
  })
  for (const type of ['disc', 'ram', 'disc_only']) {
    const node = await startPluginNode({ plugin: PLUGIN, settings: { 'retainer.storage_type': type, 'retainer.max_payload_size': 1024 }, dataDir })
    t.same(await retained(t, node, '#', 2), ['ok/1=one', 'ok/2=two'], `${type}: only the sound ones`)
    await node.stop()
  }
  await withStore(dataDir, async (db) => {
    const keys: string[] = []
    for await (const key of retainerSection(db).keys()) keys.push(key)
    t.same(keys.filter((k) => damaged.includes(k)), [], 'the bad entries are gone from the store')
    t.same(keys.sort(), ['ok/1', 'ok/2'])
  })
})

t.test('max_retained_messages lowered while stopped: the surplus is removed at the next start', async (t) => {
  const dataDir = await tempDir()
  t.teardown(async () => await rm(dataDir, { recursive: true, force: true }))
  const first = await startPluginNode({ plugin: PLUGIN, dataDir })
  await publishRetained(first, { 'm/1': '1', 'm/2': '2', 'm/3': '3' })
  await first.stop()
  const second = await startPluginNode({ plugin: PLUGIN, settings: { 'retainer.max_retained_messages': 2 }, dataDir })
  t.teardown(second.stop)
  t.equal((await second.node.commands.run(['retainer', 'info'])).text, 'retained/total: 2')
  t.equal((await retained(t, second, 'm/#', 2)).length, 2)
})

t.test('retained messages an older install kept in the engine\'s store are handed to the plugin', async (t) => {
  const dataDir = await tempDir()
  t.teardown(async () => await rm(dataDir, { recursive: true, force: true }))
  // a node without the plugin makes the store; then, stopped, it gets what the core kept before the plugin existed
  const bare = await startPluginNode({ plugin: 'broker_plugin_template', dataDir })
  await bare.stop()
  await withStore(dataDir, async (db) => {
    const require = createRequire(import.meta.url)
    const Persistence = require('aedes-persistence-level/asyncPersistence.js') as new (db: unknown) => { storeRetained: (packet: object) => Promise<void> }
    const persistence = new Persistence(db)
    await persistence.storeRetained({ cmd: 'publish', topic: 'legacy/topic', payload: Buffer.from('from the core'), qos: 1, retain: true })
  })
  const node = await startPluginNode({ plugin: PLUGIN, dataDir })
  t.teardown(node.stop)
  t.same(await retained(t, node, 'legacy/#', 1), ['legacy/topic=from the core'])
  const engineStore = (node.node.engine as unknown as { persistence: { createRetainedStream: (filter: string) => AsyncIterable<{ topic: string }> } }).persistence
  const left: string[] = []
  for await (const packet of engineStore.createRetainedStream('#')) left.push(packet.topic)
  t.same(left.filter((topic) => !topic.startsWith('$SYS/')), [], 'no longer in the engine\'s store: the plugin has it')
  t.equal((await node.node.commands.run(['retainer', 'topics'])).text, 'legacy/topic')
})

t.test('kill -9 of a real node process: disc_only keeps them; ram, memory only, does not', async (t) => {
  const dataDir = await tempDir()
  t.teardown(async () => await rm(dataDir, { recursive: true, force: true }))
  const start = async (type: string, port?: number): Promise<BrokerProcess> => {
    const etcDir = await writePluginFiles(dataDir, { [PLUGIN]: { 'retainer.storage_type': type } })
    const broker = await spawnBroker(dataDir, { 'plugins.etc_dir': etcDir }, port)
    t.teardown(() => { broker.child.kill('SIGKILL') })
    return broker
  }
  const kill = async (broker: BrokerProcess): Promise<void> => {
    broker.child.kill('SIGKILL')
    await broker.exited
  }
  const payloadsOn = async (broker: BrokerProcess, filter: string, count: number): Promise<string[]> => {
    const client = await connect(`mqtt://127.0.0.1:${broker.port}`, { clientId: `k-${Math.random()}` })
    t.teardown(async () => await closeAll(client))
    const got: Promise<Received[]> = count > 0 ? nextMessages(client, count) : Promise.resolve([])
    await client.subscribeAsync(filter, { qos: 1 })
    const messages = await got
    t.ok(await noMessageWithin(client, NOTHING_MS), `${filter}: ${count} and no more`)
    await client.endAsync()
    return messages.map((m) => m.payload).sort()
  }

  let broker = await start('disc_only')
  const pub = await connect(`mqtt://127.0.0.1:${broker.port}`, { clientId: 'k-pub' })
  await pub.publishAsync('k/1', 'acknowledged before the kill', { qos: 1, retain: true })
  await pub.endAsync(true)
  await kill(broker)
  broker = await start('ram', broker.port)
  t.same(await payloadsOn(broker, 'k/#', 1), ['acknowledged before the kill'], 'disc_only: kept through kill -9 (and read into memory by ram)')
  await kill(broker)
  broker = await start('disc', broker.port)
  t.same(await payloadsOn(broker, 'k/#', 0), [], 'ram: gone with the killed process, as memory only means')
})

t.test('unloaded, `broker_ctl retainer` says which plugin adds it', async (t) => {
  const node = await startPluginNode({ plugin: 'broker_plugin_template' })
  t.teardown(node.stop)
  await t.rejects(node.node.commands.run(['retainer', 'info']), /unknown command: retainer \(broker_retainer adds it: broker_ctl plugins load broker_retainer\)/)
})
