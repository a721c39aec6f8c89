// Plugin contract v2 in a real node: what a load registers through ctx is
// taken back at unload, newest first, even when one cleanup throws; a failed
// load leaves nothing; capabilities are granted by name only; live settings
// change in place; two plugins cannot serve one route.
import { writeFile } from 'node:fs/promises'
import { connect as tcpConnect, type Socket } from 'node:net'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { INSTALL_ROOT } from '../lib/root.js'
import type { ContractApi } from './fixtures/contract-plugins/broker_fixture_contract/index.js'
import { startBroker, type TestBroker } from './helpers/broker.js'

const NAME = 'broker_fixture_contract'
const DIR = join(INSTALL_ROOT, 'test', 'fixtures', 'contract-plugins')

async function node (t: Test): Promise<TestBroker> {
  const broker = await startBroker({}, ['tcp'], undefined, { pluginDirs: [DIR] })
  t.teardown(broker.stop)
  return broker
}

async function loadWith (broker: TestBroker, settings: Record<string, string> = {}): Promise<ContractApi> {
  await writeFile(join(broker.dataDir, 'etc', `${NAME}.conf`), Object.entries(settings).map(([k, v]) => `${k} = ${v}\n`).join(''))
  await broker.node.plugins.load(NAME)
  const api = broker.node.plugins.api<ContractApi>(NAME)
  if (api === undefined) throw new Error('the fixture offered no api')
  return api
}

async function openConnection (port: number): Promise<Socket> {
  return await new Promise((resolve, reject) => {
    const socket = tcpConnect(port, '127.0.0.1', () => resolve(socket))
    socket.once('error', reject)
  })
}

function closed (socket: Socket): Promise<void> {
  return new Promise((resolve) => { if (socket.destroyed) resolve(); else socket.once('close', () => resolve()) })
}

function baseline (broker: TestBroker): Record<string, unknown> {
  return {
    hooks: broker.node.hooks.owners('client.connected').filter((o) => o === NAME).length,
    command: broker.node.commands.get('fixture') !== undefined,
    routes: broker.node.plugins.routes.list().filter((r) => r.owner === NAME).length,
    alarm: broker.node.observability.alarms.present().some((a) => a.id === 'fixture_contract'),
    registrations: broker.node.plugins.registrations(NAME)
  }
}

const NOTHING = { hooks: 0, command: false, routes: 0, alarm: false, registrations: 0 }

t.test('unload releases everything, newest first, and goes on past a cleanup that throws', async (t) => {
  const broker = await node(t)
  const api = await loadWith(broker, { 'fixture.throw_on_unload': 'true' })
  t.match(baseline(broker), { hooks: 1, command: true, routes: 1, alarm: true }, 'registered')
  t.ok(broker.node.plugins.registrations(NAME) >= 10)
  const connection = await openConnection(api.serverPort)
  const gone = closed(connection)
  await broker.node.plugins.unload(NAME)
  t.same(baseline(broker), NOTHING, 'nothing of the load is left')
  await gone
  t.pass('the open connection to its server was closed')
  await t.rejects(openConnection(api.serverPort), { code: 'ECONNREFUSED' }, 'the server no longer listens')
  const order = api.events.filter((e) => e.includes('released'))
  t.same(order, ['last registered, first released', 'first registered, last released'], 'reverse order; the throwing cleanup between them did not stop the second')
  const ticks = api.events.filter((e) => e === 'tick').length
  broker.node.config.set('mqtt.max_packet_size', '2MB')
  await new Promise((resolve) => setTimeout(resolve, 50))
  t.equal(api.events.filter((e) => e === 'tick').length, ticks, 'the interval stopped')
  t.notOk(api.events.some((e) => e.startsWith('watch')), 'the node setting watcher was removed')
  t.notOk(api.events.includes('timeout fired'))
})

t.test('a node setting watcher sees changes while loaded', async (t) => {
  const broker = await node(t)
  const api = await loadWith(broker)
  broker.node.config.set('mqtt.max_packet_size', '2MB')
  t.ok(api.events.includes('watch 2097152'))
  await broker.node.plugins.unload(NAME)
})

t.test('a load that fails after registering everything leaves nothing behind', async (t) => {
  const broker = await node(t)
  await t.rejects(loadWith(broker, { 'fixture.fail_after_registering': 'true' }), /fails after registering everything/)
  t.same(baseline(broker), NOTHING)
  t.notOk(broker.node.plugins.isActive(NAME))
})

t.test('administration is granted only to a plugin that names it', async (t) => {
  const broker = await node(t)
  await t.rejects(loadWith(broker, { 'fixture.want_admin': 'true' }), /not granted administration/)
  t.same(baseline(broker), NOTHING)
})

t.test('a live setting changes in place; any other setting reloads', async (t) => {
  const broker = await node(t)
  const api = await loadWith(broker)
  const registrations = broker.node.plugins.registrations(NAME)
  await broker.node.service.setPluginSettings(NAME, { 'fixture.live': 'b' })
  t.ok(api.events.includes('live b'), 'the watcher got the new value')
  t.equal(broker.node.plugins.api(NAME), api, 'the same load')
  t.equal(broker.node.plugins.registrations(NAME), registrations)
  await broker.node.service.setPluginSettings(NAME, { 'fixture.other': 'y' })
  t.not(broker.node.plugins.api(NAME), api, 'a new load')
  t.ok(api.events.includes('first registered, last released'), 'the old load was released')
  await broker.node.plugins.unload(NAME)
})

t.test('two plugins cannot serve one route', async (t) => {
  const broker = await startBroker({}, ['tcp'], undefined, { pluginDirs: [DIR], plugins: { broker_plugin_template: {} } })
  t.teardown(broker.stop)
  await t.rejects(loadWith(broker, { 'fixture.route': '/template/greetings' }), /route GET \/template\/greetings is served by broker_plugin_template already/)
  t.same(baseline(broker), NOTHING)
})
