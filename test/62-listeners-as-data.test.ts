// Listeners as data (issue 16 #6): every `listener.<type>.<name>` block is a
// listener, so EMQ X's internal listener (`listener.tcp.internal =
// 127.0.0.1:11883`) is one more block of configuration, not new code. Shown
// with real clients on both ports, the listeners API and broker_ctl.
import { rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { loadConfig, setsToLines } from '../lib/config/load.js'
import { changeSetting } from '../lib/config/overrides.js'
import { Config } from '../lib/config/store.js'
import { startApiNode, type ApiNode } from '../plugins/broker_management/test/api.js'
import { freePort, startBroker, tempDir } from './helpers/broker.js'
import { ctl } from './helpers/ctl.js'
import { closeAll, connect, waitEvent } from './helpers/mqtt.js'
import { RawClient } from './helpers/raw-client.js'

interface ListenerItem { protocol: string, listen_on: string, acceptors: number, max_conns: number, current_conns: number, shutdown_count: unknown }

t.test('a second TCP listener: clients on both ports, each listener with its own counts and limits', async (t) => {
  const internalPort = await freePort()
  const api: ApiNode = await startApiNode({
    'listener.tcp.internal': `127.0.0.1:${internalPort}`,
    'listener.tcp.internal.acceptors': 4,
    'listener.tcp.internal.max_connections': 1,
    'listener.tcp.internal.zone': 'internal'
  })
  t.teardown(api.stop)
  const node = api.broker.node
  t.same(node.listeners.map((l) => l.id), ['mqtt:tcp:external', 'mqtt:tcp:internal'], 'external first: the one "the tcp listener" means')
  const externalPort = api.broker.port()
  t.not(externalPort, internalPort)

  const inside = await connect(`mqtt://127.0.0.1:${internalPort}`, { clientId: 'inside' })
  const outside = await Promise.all(['out-1', 'out-2'].map(async (clientId) => await connect(`mqtt://127.0.0.1:${externalPort}`, { clientId })))
  t.teardown(() => closeAll(inside, ...outside))
  t.ok(inside.connected && outside.every((c) => c.connected), 'clients connect on both ports')

  const refused = await RawClient.open(internalPort, 5)
  t.teardown(() => refused.end())
  t.equal((await refused.connect({ clientId: 'inside-2' })).reasonCode, 0x97, 'internal max_connections 1: the second is refused (quota exceeded)')
  const third = await connect(`mqtt://127.0.0.1:${externalPort}`, { clientId: 'out-3' })
  t.teardown(() => closeAll(third))
  t.ok(third.connected, 'the external listener keeps its own limit')
  t.ok(await refused.waitClosed(), 'the refused client is closed')

  const listed = (await api.call('GET', `/nodes/${node.name}/listeners`)).body as ListenerItem[]
  const mqtt = listed.filter((l) => l.protocol.startsWith('mqtt:'))
  t.same(mqtt.map((l) => [l.protocol, l.listen_on]), [['mqtt:tcp', `127.0.0.1:${externalPort}`], ['mqtt:tcp', `127.0.0.1:${internalPort}`]], 'both listed as mqtt:tcp, told apart by listen_on')
  t.match(mqtt[0], { acceptors: 8, max_conns: 1024000, current_conns: 3 })
  t.match(mqtt[1], { acceptors: 4, max_conns: 1, current_conns: 1 })
  const cluster = (await api.call('GET', '/listeners/')).body as Array<{ listeners: ListenerItem[] }>
  t.equal(cluster[0].listeners.filter((l) => l.protocol === 'mqtt:tcp').length, 2, 'in the cluster-wide listing too')

  const [record] = (await api.call('GET', '/connections/inside')).body as Array<{ zone: string }>
  t.equal(record.zone, 'internal', 'a connection carries its listener\'s zone')
  const [other] = (await api.call('GET', '/connections/out-1')).body as Array<{ zone: string }>
  t.equal(other.zone, 'external')

  const closed = waitEvent(inside, 'close')
  t.equal((await api.call('DELETE', '/connections/inside')).body, 'ok')
  await closed
  const after = ((await api.call('GET', `/nodes/${node.name}/listeners`)).body as ListenerItem[]).filter((l) => l.protocol === 'mqtt:tcp')
  t.match(after[1].shutdown_count, { kicked: 1 }, 'the kick is counted on the internal listener')
  t.same(after[0].shutdown_count, [], 'and not on the external one')

  const text = await ctl(api.broker.dataDir, 'listeners')
  t.equal(text.code, 0)
  t.match(text.stdout, `listener on mqtt:tcp:127.0.0.1:${externalPort}`)
  t.match(text.stdout, `listener on mqtt:tcp:127.0.0.1:${internalPort}`, 'broker_ctl lists both')
})

t.test('a live limit of one listener changes that listener only', async (t) => {
  const internalPort = await freePort()
  const broker = await startBroker({ 'listener.tcp.internal': `127.0.0.1:${internalPort}` })
  t.teardown(broker.stop)
  const [external, internal] = broker.node.listeners
  changeSetting(broker.node.config, 'listener.tcp.internal.max_connections', '5', 'test')
  t.equal(internal.gate.maxConnections, 5)
  t.equal(external.gate.maxConnections, 1024000, 'the external listener keeps its own')
  t.throws(() => changeSetting(broker.node.config, 'listener.tcp.internal.acceptors', '2', 'test'), { name: 'SettingKindError', message: /next start/ }, 'acceptors is a restart setting for any name')
})

t.test('a key the listener type does not take is refused, naming file:line', async (t) => {
  const dir = await tempDir()
  t.teardown(async () => await rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'broker.conf')
  await writeFile(file, 'listener.tcp.internal = 127.0.0.1:11883\nlistener.tcp.internal.acceptors = 4\nlistener.tcp.internal.max_clients = 10\n')
  await t.rejects(loadConfig({ file }), { name: 'ConfigError', message: `${file}:3: listener.tcp.internal.max_clients: unknown setting for a tcp listener (it takes acceptors, max_connections, max_conn_rate, proxy_protocol, proxy_protocol_timeout, zone)` })
  await writeFile(file, 'listener.ws.inside = 127.0.0.1:18083\nlistener.ws.inside.max_connections = 10\n')
  await t.rejects(loadConfig({ file }), { name: 'ConfigError', message: new RegExp(`^${file}:2: listener\\.ws\\.inside\\.max_connections: unknown setting for a ws listener`) }, 'each type has its own keys')
  await writeFile(file, 'listener.tcp.internal.max_connections = lots\n')
  await t.rejects(loadConfig({ file }), { message: `${file}:1: listener.tcp.internal.max_connections: "lots" is not an integer` }, 'values are checked for any name')
  await writeFile(file, 'listener.quic.external = 14567\n')
  await t.rejects(loadConfig({ file }), { message: `${file}:1: listener.quic.external: unknown setting` }, 'an unknown type')
  await writeFile(file, 'listener.tcp.internal =\n')
  await t.rejects(loadConfig({ file }), { message: `${file}:1: listener.tcp.internal: "" is not a listen address (port, address:port or off)` }, 'an empty address is refused, not taken as off')
  t.throws(() => new Config(setsToLines(['listener.ssl.internal.zone.x=1'])), /unknown setting/, 'nor deeper keys')
})

t.test('a listener is off without its address line, or with `off`', async (t) => {
  const dir = await tempDir()
  t.teardown(async () => await rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'broker.conf')
  // EMQ X's way: the address line commented out, the rest of the block left
  await writeFile(file, '# listener.tcp.internal = 127.0.0.1:11883\nlistener.tcp.internal.acceptors = 4\nlistener.tcp.internal.zone = internal\n')
  const commented = await loadConfig({ file })
  t.equal(commented.value('listener.tcp.internal'), null, 'no address: off')
  t.equal(commented.origin('listener.tcp.internal'), 'default')

  const broker = await startBroker({ 'listener.tcp.internal.acceptors': 4, 'listener.ssl.internal': 'off', 'listener.ssl.internal.zone': 'internal' })
  t.teardown(broker.stop)
  t.same(broker.node.listeners.map((l) => l.id), ['mqtt:tcp:external'], 'neither the listener without an address nor the one set off opens')
})

t.test('two listeners on one port stop the start with a clear error', async (t) => {
  const dir = await tempDir()
  t.teardown(async () => await rm(dir, { recursive: true, force: true }))
  const port = await freePort()
  await t.rejects(startBroker({ 'listener.tcp.external': `127.0.0.1:${port}`, 'listener.tcp.internal': `127.0.0.1:${port}` }, ['tcp'], dir),
    { name: 'ConfigError', message: `--set listener.tcp.internal=127.0.0.1:${port}: listener.tcp.internal: port ${port} (127.0.0.1) is taken by listener.tcp.external = 127.0.0.1:${port} (--set listener.tcp.external=127.0.0.1:${port})` })
  await t.rejects(startBroker({ 'listener.tcp.external': `127.0.0.1:${port}`, 'listener.ws.external': `0.0.0.0:${port}` }, ['tcp'], dir),
    { message: new RegExp(`listener\\.ws\\.external: port ${port} \\(0\\.0\\.0\\.0\\) is taken by listener\\.tcp\\.external`) }, 'every address overlaps any address')
  const other = await freePort()
  const apart = await startBroker({ 'listener.tcp.external': `127.0.0.1:${port}`, 'listener.tcp.internal': `127.0.0.1:${other}` })
  t.teardown(apart.stop)
  t.equal(apart.node.listeners.length, 2, 'on two ports they both open')
})

t.test('a port taken by another process names the listener', async (t) => {
  const dir = await tempDir()
  t.teardown(async () => await rm(dir, { recursive: true, force: true }))
  const blocker = await startBroker()
  t.teardown(blocker.stop)
  await t.rejects(startBroker({ 'listener.tcp.internal': `127.0.0.1:${blocker.port()}` }, ['tcp'], dir),
    { code: 'EADDRINUSE', message: `listener.tcp.internal: cannot listen on 127.0.0.1:${blocker.port()} (EADDRINUSE)` })
})

t.test('a listener kept in the runtime overrides opens at the next start', async (t) => {
  const dir = await tempDir()
  t.teardown(async () => await rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'broker.conf')
  await writeFile(file, `node.data_dir = ${dir}\nlistener.tcp.internal.zone = internal\n`)
  const config = await loadConfig({ file, root: '/' })
  const port = await freePort()
  changeSetting(config, 'listener.tcp.internal', `127.0.0.1:${port}`, 'test', true)
  t.equal(config.value('listener.tcp.internal'), null, 'a restart setting: not in force now')
  const next = await loadConfig({ file, root: '/' })
  t.same(next.value('listener.tcp.internal'), { host: '127.0.0.1', port })
  t.same(next.mqttListeners().filter((l) => l.type === 'tcp').map((l) => l.name), ['external', 'internal'])
})

t.test('listeners are ordered by type, external first, whatever the order of the lines', async (t) => {
  const config = new Config(setsToLines(['listener.ws.b=1', 'listener.tcp.internal=2', 'listener.ws.a=3']))
  t.same(config.mqttListeners().map(({ type, name }) => `${type}.${name}`), ['tcp.external', 'tcp.internal', 'ssl.external', 'ws.external', 'ws.b', 'ws.a', 'wss.external'])
  t.equal(config.items().filter((i) => i.key.startsWith('listener.tcp.internal')).length, 7, 'a named listener has every key of its type')
})

t.test('any type takes more listeners: a second WebSocket listener with its own path', async (t) => {
  const broker = await startBroker({ 'listener.ws.internal': '127.0.0.1:0', 'listener.ws.internal.mqtt_path': '/inside', 'listener.ws.internal.zone': 'internal' }, ['tcp', 'ws'])
  t.teardown(broker.stop)
  const [external, internal] = broker.node.listeners.filter((l) => l.protocol === 'mqtt:ws')
  t.same([external.id, internal.id], ['mqtt:ws:external', 'mqtt:ws:internal'])
  const inside = await connect(`ws://127.0.0.1:${internal.address.port}/inside`, { clientId: 'ws-inside' })
  const outside = await connect(`ws://127.0.0.1:${external.address.port}/mqtt`, { clientId: 'ws-outside' })
  t.teardown(() => closeAll(inside, outside))
  t.ok(inside.connected && outside.connected, 'each at its own path')
  t.same([external.gate.counters.current, internal.gate.counters.current], [1, 1], 'each counts its own')
})
