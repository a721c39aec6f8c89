// The plugin host through a real in-process node with the test fixtures
// (test/fixtures/plugins): boot order, run-time load/unload/reload and the
// data/loaded_plugins file, hook clean-up, load failures, settings errors, and
// the notification hooks seen by a plugin during a real MQTT session.
import { existsSync } from 'node:fs'
import { readdir, readFile, writeFile } from 'node:fs/promises'
import type { Socket } from 'node:net'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { HookName } from '../lib/hooks/types.js'
import { PluginError } from '../lib/plugins/host.js'
import { INSTALL_ROOT } from '../lib/root.js'
import { FIXTURE_PLUGINS, startBroker, type TestBroker } from './helpers/broker.js'
import { closeAll, connect, type MqttClient } from './helpers/mqtt.js'
import { calls } from './fixtures/plugins/fixture-plugin.js'

const A = 'broker_fixture_a'
const B = 'broker_fixture_b'
const BROKEN = 'broker_fixture_broken'
const HOOKS: HookName[] = ['client.authenticate', 'client.check_acl', 'client.connected', 'client.disconnected',
  'session.subscribed', 'session.unsubscribed', 'message.publish', 'message.accepted', 'message.delivered', 'message.acked', 'message.dropped']

type Settings = Record<string, string>

async function boot (t: Test, plugins: Record<string, Settings> = {}, settings: Settings = {}): Promise<TestBroker> {
  const broker = await startBroker(settings, ['tcp'], undefined, { plugins, pluginDirs: [FIXTURE_PLUGINS] })
  t.teardown(broker.stop)
  return broker
}

const url = (broker: TestBroker): string => `mqtt://127.0.0.1:${broker.port()}`
const loadedFile = async (broker: TestBroker): Promise<string> => await readFile(join(broker.dataDir, 'loaded_plugins'), 'utf8')
const confFile = (broker: TestBroker, plugin: string): string => join(broker.dataDir, 'etc', `${plugin}.conf`)
/** the fixtures' places in a hook's chain */
const fixtureOwners = (broker: TestBroker, hook: HookName): string[] => broker.node.hooks.owners(hook).filter((o) => o.startsWith('broker_fixture_'))
/** how many handlers `plugin` has on each hook point (only those with at least one) */
function handlerCounts (broker: TestBroker, plugin: string): Partial<Record<HookName, number>> {
  const counts: Partial<Record<HookName, number>> = {}
  for (const hook of HOOKS) {
    const n = broker.node.hooks.owners(hook).filter((o) => o === plugin).length
    if (n > 0) counts[hook] = n
  }
  return counts
}
const ONE_OF_EACH = Object.fromEntries(HOOKS.map((hook) => [hook, 1]))

/** The rejection of `promise`; a resolution is an error. */
async function rejection (promise: Promise<unknown>): Promise<Error> {
  return await promise.then(() => { throw new Error('expected a rejection') }, (err: Error) => err)
}

/** Connects and closes at once; resolves 'connected' or the CONNACK refusal code. */
async function tryConnect (broker: TestBroker, clientId: string, options: { username?: string } = {}): Promise<'connected' | number> {
  try {
    await closeAll(await connect(url(broker), { clientId, ...options }))
    return 'connected'
  } catch (err) {
    return (err as { code?: number }).code ?? -1
  }
}

async function waitFor (what: string, check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** The arguments of each call of `hook` on `plugin`'s handler, in order. */
const callsOf = (hook: HookName, plugin = A): unknown[][] => (calls[hook] ?? []).filter((c) => c.plugin === plugin).map((c) => c.args)

t.beforeEach(() => {
  for (const hook of Object.keys(calls)) delete calls[hook]
})

t.test('boot loads data/loaded_plugins in order; list() shows every discovered plugin', async (t) => {
  const broker = await boot(t, { [B]: { 'fixture.auth': 'allow' }, [A]: { 'fixture.auth': 'deny' } }, { 'mqtt.allow_anonymous': 'false' })
  t.same(fixtureOwners(broker, 'client.authenticate'), [B, A], 'B runs before A, as listed')
  t.equal(await tryConnect(broker, 'c-order'), 'connected', "B's allow ends the chain before A's deny")

  const discovered: string[] = []
  for (const dir of [join(INSTALL_ROOT, 'plugins'), FIXTURE_PLUGINS]) {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      if (entry.isDirectory() && entry.name.startsWith('broker_') && existsSync(join(dir, entry.name, 'index.ts'))) discovered.push(entry.name)
    }
  }
  const list = await broker.node.plugins.list()
  t.same(list.map((p) => p.name), discovered.sort(), 'every plugin folder, sorted by name')
  t.same(list.filter((p) => p.active).map((p) => p.name), [A, B], 'only the listed ones are active')
  t.same(list.filter((p) => p.name.startsWith('broker_fixture_') || p.name === 'broker_plugin_template'), [
    { name: A, version: '1.0.0', description: `test fixture ${A}`, active: true },
    { name: B, version: '1.0.0', description: `test fixture ${B}`, active: true },
    { name: BROKEN, version: '1.0.0', description: 'a plugin whose load throws', active: false },
    { name: 'broker_fixture_slow', version: '1.0.0', description: 'a plugin that takes its time to load', active: false },
    { name: 'broker_plugin_template', version: '0.1.0', description: 'Example plugin: publishes a greeting when a client connects', active: false }
  ])
})

t.test('the reverse order in data/loaded_plugins reverses the chain', async (t) => {
  const broker = await boot(t, { [A]: { 'fixture.auth': 'deny' }, [B]: { 'fixture.auth': 'allow' } }, { 'mqtt.allow_anonymous': 'false' })
  t.same(fixtureOwners(broker, 'client.authenticate'), [A, B])
  t.equal(await tryConnect(broker, 'c-order'), 4, "A's deny comes first: CONNACK 4")
})

t.test('load at run time activates the plugin and rewrites data/loaded_plugins', async (t) => {
  const broker = await boot(t)
  const { plugins } = broker.node
  t.equal(await loadedFile(broker), '')
  await plugins.load(A)
  t.ok(plugins.isActive(A))
  t.same((await plugins.list()).filter((p) => p.active).map((p) => p.name), [A])
  t.equal(await loadedFile(broker), `${A}.\n`)
  await plugins.load(B)
  t.equal(await loadedFile(broker), `${A}.\n${B}.\n`, 'appended in chain order')
  t.same(fixtureOwners(broker, 'client.authenticate'), [A, B])
  t.same(handlerCounts(broker, A), ONE_OF_EACH)

  const again = await rejection(plugins.load(A))
  t.type(again, PluginError)
  t.match(again, { code: 'already_started', message: 'already_started' })
  t.same(handlerCounts(broker, A), ONE_OF_EACH, 'the refused load added nothing')
  t.equal(await loadedFile(broker), `${A}.\n${B}.\n`)
})

t.test('unload of an inactive plugin is not_started; an unknown plugin is not_found', async (t) => {
  const broker = await boot(t, { [A]: {} })
  const { plugins } = broker.node
  t.match(await rejection(plugins.unload(B)), { name: 'PluginError', code: 'not_started', message: 'not_started' })
  t.match(await rejection(plugins.unload(BROKEN)), { code: 'not_started' })
  await plugins.unload(A)
  t.match(await rejection(plugins.unload(A)), { code: 'not_started' }, 'twice')
  for (const call of [plugins.load('broker_nope'), plugins.unload('broker_nope'), plugins.reload('broker_nope')]) {
    const err = await rejection(call)
    t.type(err, PluginError)
    t.match(err, { code: 'not_found', message: 'plugin broker_nope not found' })
  }
  t.equal(await loadedFile(broker), '')
})

t.test('unload removes every hook the plugin added, and its effect', async (t) => {
  const broker = await boot(t, { [A]: { 'fixture.auth': 'deny' } })
  t.same(handlerCounts(broker, A), ONE_OF_EACH)
  t.equal(await tryConnect(broker, 'c-unload'), 4, 'refused while A is loaded')
  await broker.node.plugins.unload(A)
  t.notOk(broker.node.plugins.isActive(A))
  t.same(handlerCounts(broker, A), {}, 'no handler of A is left')
  t.notOk(broker.node.hooks.has('client.authenticate'))
  t.notOk(broker.node.hooks.has('client.check_acl'))
  t.equal(await tryConnect(broker, 'c-unload'), 'connected', 'allowed once A is gone')
  t.equal(await loadedFile(broker), '')
})

t.test('load, unload, load leaves exactly one set of handlers', async (t) => {
  const broker = await boot(t)
  const { plugins } = broker.node
  await plugins.load(A)
  await plugins.unload(A)
  await plugins.load(A)
  await plugins.reload(A)
  t.same(handlerCounts(broker, A), ONE_OF_EACH)
  t.same(broker.node.hooks.owners('client.authenticate').filter((o) => o === A), [A])
  t.equal(await tryConnect(broker, 'c-once'), 'connected')
  await waitFor('client.connected', () => callsOf('client.connected').length > 0)
  t.equal(callsOf('client.connected').length, 1, 'one notification per connect')
  t.equal(await loadedFile(broker), `${A}.\n`)
})

t.test('a plugin that throws in load: reported, no hook left, not active, broker running', async (t) => {
  const broker = await boot(t)
  const err = await rejection(broker.node.plugins.load(BROKEN))
  t.type(err, PluginError)
  t.match(err, { code: 'load_failed', message: `plugin ${BROKEN} failed to load: cannot reach its backend` })
  t.match((err.cause as Error | undefined)?.message, 'cannot reach its backend')
  t.notOk(broker.node.plugins.isActive(BROKEN))
  t.same((await broker.node.plugins.list()).filter((p) => p.active), [])
  t.same(handlerCounts(broker, BROKEN), {}, 'the handler it added before throwing is removed')
  t.notOk(broker.node.hooks.has('client.authenticate'))
  t.equal(await tryConnect(broker, 'c-broken'), 'connected', 'its deny handler does not refuse anyone')
  t.equal(await loadedFile(broker), '', 'not recorded')
})

t.test('a plugin that throws at boot is skipped and the rest load', async (t) => {
  const broker = await boot(t, { [A]: {}, [BROKEN]: {}, [B]: {} })
  t.ok(broker.node.plugins.isActive(A))
  t.ok(broker.node.plugins.isActive(B))
  t.notOk(broker.node.plugins.isActive(BROKEN))
  t.same(broker.node.hooks.owners('client.authenticate'), [A, B])
  t.equal(await tryConnect(broker, 'c-boot'), 'connected')
})

t.test('a settings error names file, line and key; fixing it lets the plugin load', async (t) => {
  const broker = await boot(t)
  const file = confFile(broker, A)
  await writeFile(file, '## fixture a\nfixture.acl = ignore\nfixture.auth = maybe\n')
  const err = await rejection(broker.node.plugins.load(A))
  t.ok(err.message.startsWith(`${file}:3: fixture.auth: `), err.message)
  t.match(err.message, /: "maybe" is not one of allow | deny | ignore | superuser$/)
  t.notOk(broker.node.plugins.isActive(A))
  t.same(handlerCounts(broker, A), {})
  t.equal(await loadedFile(broker), '')

  await writeFile(file, 'fixture.acl = ignore\nnot a setting\n')
  t.ok((await rejection(broker.node.plugins.load(A))).message.startsWith(`${file}:2: expected "key = value"`))

  await writeFile(file, 'fixture.auth = ignore\n')
  await broker.node.plugins.load(A)
  t.equal(await loadedFile(broker), `${A}.\n`)
})

t.test('reload re-reads the settings and keeps the chain place', async (t) => {
  const broker = await boot(t, { [A]: { 'fixture.auth': 'deny' }, [B]: {} }, { 'mqtt.allow_anonymous': 'false' })
  t.equal(await tryConnect(broker, 'c-reload'), 4)
  await writeFile(confFile(broker, A), 'fixture.auth = allow\n')
  t.equal(await tryConnect(broker, 'c-reload'), 4, 'a changed file alone changes nothing')
  await broker.node.plugins.reload(A)
  t.equal(await tryConnect(broker, 'c-reload'), 'connected', 'the new answer')
  t.same(fixtureOwners(broker, 'client.authenticate'), [A, B])
  t.same(handlerCounts(broker, A), ONE_OF_EACH)
  t.equal(await loadedFile(broker), `${A}.\n${B}.\n`)
})

t.test('notification hooks see a real client session', async (t) => {
  const broker = await boot(t, { [A]: {} })
  const sub = await connect(url(broker), { clientId: 'sess-1', username: 'u1', clean: false, protocolVersion: 4 })
  t.teardown(async () => { await closeAll(sub) })
  const pub = await connect(url(broker), { clientId: 'pub-1', protocolVersion: 5 })
  t.teardown(async () => { await closeAll(pub) })
  const info = (client: MqttClient, clientId: string, protoVer: number, username?: string): Record<string, unknown> => ({
    clientId, username, ipAddress: '127.0.0.1', port: (client.stream as Socket).localPort, protocol: 'mqtt:tcp', protoVer, peercert: 'nossl', mountpoint: '', isSuperuser: false
  })
  const subInfo = info(sub, 'sess-1', 4, 'u1')
  const pubInfo = info(pub, 'pub-1', 5)
  await waitFor('client.connected ×2', () => callsOf('client.connected').length === 2)
  t.same(callsOf('client.connected'), [[subInfo], [pubInfo]])

  await sub.subscribeAsync('n/t', { qos: 1 })
  await waitFor('session.subscribed', () => callsOf('session.subscribed').length === 1)
  t.same(callsOf('session.subscribed'), [[subInfo, 'n/t', 1]])

  await pub.publishAsync('n/t', 'p1', { qos: 1 })
  await waitFor('message.acked', () => callsOf('message.acked').length === 1)
  const message = { topic: 'n/t', payload: Buffer.from('p1'), qos: 1, retain: false, from: 'pub-1' }
  const [[published]] = callsOf('message.publish') as Array<[Record<string, unknown>]>
  t.match(published, { ...message, client: pubInfo }, 'message.publish names the publishing client')
  t.equal(typeof published.authorize, 'function', '…and can ask its ACL about another topic')
  t.equal(callsOf('message.publish').length, 1)
  t.same(callsOf('message.accepted'), [[message, pubInfo]], 'message.accepted: the message its ACL let in, and its publisher')
  t.same(callsOf('message.delivered'), [[subInfo, message]])
  t.same(callsOf('message.acked'), [[subInfo, message]])

  await sub.unsubscribeAsync('n/t')
  await waitFor('session.unsubscribed', () => callsOf('session.unsubscribed').length === 1)
  t.same(callsOf('session.unsubscribed'), [[subInfo, 'n/t']])

  await sub.endAsync()
  await waitFor('client.disconnected', () => callsOf('client.disconnected').length === 1)
  t.same(callsOf('client.disconnected'), [[subInfo, 'normal']], 'a clean DISCONNECT')
  ;(pub.stream as Socket).destroy()
  await waitFor('client.disconnected ×2', () => callsOf('client.disconnected').length === 2)
  t.same(callsOf('client.disconnected')[1], [pubInfo, 'closed'], 'a dropped connection')
  t.same(callsOf('message.dropped'), [])
})

t.test('concurrent loads of one plugin register it once; reload keeps a running plugin on bad settings', async (t) => {
  const broker = await startBroker({}, ['tcp'], undefined, { plugins: {}, pluginDirs: [FIXTURE_PLUGINS] })
  t.teardown(broker.stop)
  const results = await Promise.allSettled([broker.node.plugins.load('broker_fixture_a'), broker.node.plugins.load('broker_fixture_a')])
  t.same(results.map((r) => r.status), ['fulfilled', 'rejected'], 'the second load finds it started')
  t.same(broker.node.hooks.owners('client.authenticate'), ['broker_fixture_a'], 'one set of handlers')

  const conf = join(broker.dataDir, 'etc', 'broker_fixture_a.conf')
  await writeFile(conf, 'fixture.auth = sometimes\n')
  await t.rejects(broker.node.plugins.reload('broker_fixture_a'), /broker_fixture_a\.conf:1: fixture\.auth: /)
  t.equal(broker.node.plugins.isActive('broker_fixture_a'), true, 'the plugin keeps running with its old settings')
  t.same(broker.node.hooks.owners('client.authenticate'), ['broker_fixture_a'])

  await broker.node.plugins.unload('broker_fixture_a')
  await writeFile(conf, 'fixture.auth = ignore\n')
  await broker.node.plugins.reload('broker_fixture_a')
  t.equal(broker.node.plugins.isActive('broker_fixture_a'), true, 'reloading an inactive plugin loads it')
  t.equal(await readFile(join(broker.dataDir, 'loaded_plugins'), 'utf8'), 'broker_fixture_a.\n', '…and records it')
})
