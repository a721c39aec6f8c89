// Two cluster nodes in this test process on a real redis-server: the same
// behaviour test/28–30 check on node processes, here where the coverage sees
// the cluster code (membership, RPC, cluster-wide operations, takeover,
// timer ownership, shared subscriptions, a node leaving).
import type { IDisconnectPacket, IPublishPacket } from 'mqtt-packet'
import t from 'tap'
import { onHolder } from '../lib/cluster/cluster.js'
import type { SharedPlacement } from '../lib/cluster/shared-placement.js'
import { startBroker, type TestBroker } from './helpers/broker.js'
import { waitFor } from './helpers/cluster.js'
import { closeAll, connect, nextMessages, noMessageWithin, waitEvent } from './helpers/mqtt.js'
import { RawClient } from './helpers/raw-client.js'
import { startRedis } from './helpers/servers/redis.js'

const redis = await startRedis()
t.teardown(async () => await redis.close())
const name = `inproc${process.pid}`

async function node (nodeName: string): Promise<TestBroker> {
  return await startBroker({
    'node.name': nodeName,
    'cluster.discovery': 'redis',
    'cluster.name': name,
    'cluster.redis.server': `127.0.0.1:${redis.port}`,
    'cluster.heartbeat_interval': '300ms',
    'cluster.rpc_timeout': '1s'
  })
}

const a = await node('a@127.0.0.1')
const b = await node('b@127.0.0.1')
t.teardown(async () => { await a.stop(); await b.stop() })
/** What a promise rejects with (undefined when it resolves). */
async function failure (promise: Promise<unknown>): Promise<unknown> {
  return await promise.then(() => undefined, (err: unknown) => err)
}

const url = (broker: TestBroker): string => `mqtt://127.0.0.1:${broker.port()}`
const A = a.node.service
const B = b.node.service

await waitFor(async () => (await A.cluster.nodes()).length === 2 && (await B.cluster.nodes()).length === 2, 10_000, 'both nodes see each other')

t.test('membership, cluster-wide listings and single-node calls', async (t) => {
  t.same(await A.cluster.nodes(), ['a@127.0.0.1', 'b@127.0.0.1'])
  t.match(await B.cluster.members(), [{ node: 'a@127.0.0.1', status: 'Running', address: `127.0.0.1:${a.port()}` }, { node: 'b@127.0.0.1' }])
  t.ok(A.cluster.linked(), 'the link to Redis works')
  t.same(A.health({ readiness: true }).reasons, [])
  const client = await connect(url(b), { clientId: 'on-b' })
  t.teardown(async () => await closeAll(client))
  const everywhere = await A.cluster.all('connections')
  t.match(everywhere, [{ node: 'a@127.0.0.1', value: [] }, { node: 'b@127.0.0.1', value: [{ client_id: 'on-b', node: 'b@127.0.0.1' }] }])
  t.match(await A.cluster.on('b@127.0.0.1', 'connection', 'on-b'), [{ client_id: 'on-b' }], 'asked of b through a')
  t.match(await failure(A.cluster.on('zz@127.0.0.1', 'connections')), { kind: 'not_found' }, 'an unknown node')
  t.match(await failure(A.cluster.on('b@127.0.0.1', 'setConfig', 'broker', 'no.such.key', '1')), { kind: 'not_found', name: 'ServiceError' }, 'a refusal on b comes back as the same refusal')
  const outcomes = await A.cluster.each('kick', 'nobody')
  t.same(outcomes.map((o: { ok: boolean }) => o.ok), [true, true])
})

t.test('operations that only the holder can do, cluster-wide settings, banned entries', async (t) => {
  const client = await connect(url(b), { clientId: 'held', protocolVersion: 5 })
  const publisher = await connect(url(a), { clientId: 'pub-a' })
  t.teardown(async () => await closeAll(client, publisher))
  t.ok(await onHolder(A.cluster, 'subscribe', 'held', 'held/t', 1), 'subscribed on b through a')
  const got = nextMessages(client, 1)
  await publisher.publishAsync('held/t', 'via-a', { qos: 1 })
  t.match(await got, [{ topic: 'held/t', payload: 'via-a' }])
  t.notOk(await onHolder(A.cluster, 'kick', 'nobody-here'), 'no node holds it')
  await A.cluster.all('setConfig', 'broker', 'broker.sys_interval', '30s')
  t.equal(b.node.config.get('broker.sys_interval'), 30_000, 'changed on b too')
  await A.cluster.all('ban', { who: 'bad-guy', as: 'client_id' })
  await t.rejects(connect(url(b), { clientId: 'bad-guy', protocolVersion: 5 }), { code: 0x8a }, 'banned through a, refused by b')
  t.same((await A.cluster.all('unban', 'client_id', 'bad-guy')).map((x: { value: boolean }) => x.value), [true, true])
  const closed = waitEvent<[IDisconnectPacket]>(client, 'disconnect')
  t.ok(await onHolder(A.cluster, 'kick', 'held'))
  t.equal((await closed)[0].reasonCode, 0x98)
})

t.test('takeover across nodes: DISCONNECT 0x8E, the session continues', async (t) => {
  const first = await connect(url(a), { clientId: 'mover', protocolVersion: 5, clean: false, properties: { sessionExpiryInterval: 60 } })
  await first.subscribeAsync('mover/t', { qos: 1 })
  const told = waitEvent<[IDisconnectPacket]>(first, 'disconnect')
  const second = await connect(url(b), { clientId: 'mover', protocolVersion: 5, clean: false, properties: { sessionExpiryInterval: 60 } })
  t.teardown(async () => await closeAll(first, second))
  t.equal((await told)[0].reasonCode, 0x8e)
  const got = nextMessages(second, 1)
  await A.publish({ topic: 'mover/t', payload: 'still', qos: 1 })
  t.match(await got, [{ payload: 'still' }])
})

t.test('a session-expiry timer armed on a does not fire for a client back on b', async (t) => {
  const session = { protocolVersion: 5 as const, clean: false, properties: { sessionExpiryInterval: 1 } }
  const gone = await connect(url(a), { clientId: 'timed', ...session })
  await gone.subscribeAsync('timed/t', { qos: 1 })
  await gone.endAsync()
  const back = await connect(url(b), { clientId: 'timed', ...session })
  t.teardown(async () => await closeAll(back))
  await new Promise((resolve) => setTimeout(resolve, 1800))
  const got = nextMessages(back, 1)
  await A.publish({ topic: 'timed/t', payload: 'kept', qos: 1 })
  t.match(await got, [{ payload: 'kept' }], 'a\'s timer fired and did nothing: the subscription is there')
})

t.test('a shared subscription spread over both nodes gets each message once', async (t) => {
  const m1 = await connect(url(a), { clientId: 'g-1', protocolVersion: 5 })
  const m2 = await connect(url(b), { clientId: 'g-2', protocolVersion: 5 })
  const publisher = await connect(url(a), { clientId: 'g-pub' })
  t.teardown(async () => await closeAll(m1, m2, publisher))
  await m1.subscribeAsync('$share/g/s/#', { qos: 1 })
  await m2.subscribeAsync('$share/g/s/#', { qos: 1 })
  // while one node has not yet heard of the other's member, both may draw themselves (a duplicate, as QoS 1
  // allows, by design: lib/cluster/shared-placement.ts); each message once is the promise once both know
  const sees = (node: TestBroker): number => (node.node.shared.placement as SharedPlacement).seen('g\u0000s/#')?.size ?? 0
  await waitFor(() => sees(a) === 2 && sees(b) === 2, 10_000, 'both nodes see a member on each')
  const seen: string[] = []
  for (const m of [m1, m2]) m.on('message', (_topic, payload) => seen.push(payload.toString()))
  for (let i = 0; i < 20; i++) await publisher.publishAsync('s/x', String(i), { qos: 1 })
  await waitFor(() => seen.length >= 20, 5000, '20 deliveries')
  t.ok(await noMessageWithin(m1, 300))
  t.equal(seen.length, 20, 'no duplicates')
  t.same([...new Set(seen)].length, 20)
})

t.test('a plugin\'s code swapped on another node (broker_reloader\'s route for another node)', async (t) => {
  await b.node.plugins.load('broker_plugin_template')
  t.teardown(async () => { await b.node.plugins.unload('broker_plugin_template') })
  t.same(await A.cluster.on('b@127.0.0.1', 'reloadPluginCode', 'broker_plugin_template'), { plugin: 'broker_plugin_template', version: '0.1.0', active: true })
  t.ok(b.node.plugins.isActive('broker_plugin_template'), 'running on b, its new load')
  t.notOk(a.node.plugins.isActive('broker_plugin_template'), 'not loaded on a by it')
  t.match(await failure(A.cluster.on('b@127.0.0.1', 'reloadPluginCode', 'broker_nothing')), { kind: 'not_found', message: 'plugin broker_nothing not found' })
})

t.test('a node that stops leaves the cluster; calls to it fail at once', async (t) => {
  const c = await node('c@127.0.0.1')
  // as a's heartbeat saw it (what $SYS/brokers lists)
  await waitFor(() => a.node.observability.nodeNames().includes('c@127.0.0.1'), 10_000, 'c joined')
  await c.stop()
  await waitFor(async () => !(await A.cluster.nodes()).includes('c@127.0.0.1'), 10_000, 'c left')
  await waitFor(() => A.cluster.stopped().includes('c@127.0.0.1'), 5000, 'c listed as stopped')
  t.match(await failure(A.cluster.on('c@127.0.0.1', 'connections')), { kind: 'badrpc' })
})

t.test('a clean start on another node clears the session\'s inbound QoS 2 state in Redis (GHSA-p8r9-qf8w-p73r, aedes-persistence-redis 12)', async (t) => {
  const sub = await connect(url(a), { clientId: 'qos2-sub' })
  t.teardown(async () => await closeAll(sub))
  await sub.subscribeAsync('qos2/clean', { qos: 2 })
  const publish = (client: RawClient, payload: string): void => {
    client.send({ cmd: 'publish', topic: 'qos2/clean', payload, qos: 2, messageId: 7, retain: false, dup: false } as IPublishPacket)
  }
  const first = await RawClient.open(a.port(), 4)
  await first.connect({ clientId: 'qos2-client', clean: false })
  let got = nextMessages(sub, 1)
  publish(first, 'first')
  await first.next('pubrec')
  t.equal((await got)[0].payload, 'first')
  first.end() // never sends PUBREL: the id stays in the session's inbound state
  const second = await RawClient.open(b.port(), 4)
  t.teardown(() => second.end())
  await second.connect({ clientId: 'qos2-client', clean: true })
  got = nextMessages(sub, 1)
  publish(second, 'second')
  await second.next('pubrec')
  t.equal((await got)[0].payload, 'second', 'the reused id is a new message, not taken for a duplicate')
})
