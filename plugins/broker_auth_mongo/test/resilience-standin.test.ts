// A MongoDB server that is down, killed, slow or swamped: the node stays up,
// CONNECTs are answered (0x88 / 3.x code 3 by default), the alarm comes and
// goes, and the plugin recovers by itself. The real `mongodb` driver talks to
// the wire-protocol STAND-IN (not a real mongod), which can be killed,
// restarted on its port and told to answer late.
import t, { type Test } from 'tap'
import type { TestBroker } from '../../../test/helpers/broker.js'
import { closeAll, connect } from '../../../test/helpers/mqtt.js'
import { connack, digest, granted, MongoStandin, startNode } from './standin-node.js'

const ALARM = 'broker_auth_mongo_unavailable'

async function standinWithUsers (t: Test): Promise<MongoStandin> {
  const standin = await MongoStandin.start({
    data: {
      mqtt: {
        mqtt_user: [
          { username: 'alice', password: digest('sha256', 'pw') },
          { username: 'root', password: digest('sha256', 'pw'), is_superuser: true }
        ],
        mqtt_acl: [{ username: 'alice', subscribe: ['alice/#'] }]
      }
    }
  })
  t.teardown(() => standin.kill())
  return standin
}

async function node (t: Test, standin: MongoStandin, settings: Record<string, string> = {}, nodeSettings: Record<string, string> = {}): Promise<TestBroker> {
  const broker = await startNode(standin, settings, nodeSettings)
  t.teardown(() => broker.stop())
  return broker
}

const alarmed = (broker: TestBroker): boolean => broker.node.observability.alarms.present().some((a) => a.id === ALARM)

/** Retries `probe` until it returns true (the plugin recovers on its own; the test only waits for it). */
async function eventually (probe: () => Promise<boolean>, what: string, limitMs = 15_000): Promise<void> {
  const deadline = Date.now() + limitMs
  while (!await probe()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

t.test('stand-in: server down at start: the node starts, CONNECT is refused with 3 / 0x88, the alarm is raised; it recovers', async (t) => {
  const standin = await standinWithUsers(t)
  await standin.kill()
  const broker = await node(t, standin, { 'auth.mongo.query_timeout': '500ms' })
  t.ok(broker.node.listeners.length > 0, 'the node is up')
  t.equal(await connack(broker, { clientId: 'd1', username: 'alice', password: 'pw' }), 3, 'MQTT 3.1.1: 3 server unavailable')
  t.equal(await connack(broker, { clientId: 'd2', username: 'alice', password: 'pw', protocolVersion: 5 }), 0x88, 'MQTT 5: 0x88 server unavailable')
  t.ok(alarmed(broker), `alarm ${ALARM} present`)
  const alarm = broker.node.observability.alarms.present().find((a) => a.id === ALARM)
  t.match(alarm?.summary, new RegExp(`MongoDB 127\\.0\\.0\\.1:${standin.port}`), 'the alarm names the server')

  await standin.restart()
  await eventually(async () => await connack(broker, { clientId: 'd3', username: 'alice', password: 'pw' }) === 0, 'alice connects')
  t.pass('after the server started, alice connects without any action on the node')
  t.notOk(alarmed(broker), 'the alarm is cleared')
})

t.test('stand-in: unavailable.auth = ignore passes the client on (allow_anonymous decides); the ACL check is ignored (acl_nomatch decides)', async (t) => {
  const standin = await standinWithUsers(t)
  const broker = await node(t, standin, { 'auth.mongo.query_timeout': '500ms', 'auth.mongo.unavailable.auth': 'ignore' }, { 'mqtt.allow_anonymous': 'true', 'mqtt.acl_nomatch': 'allow' })
  t.strictSame(await granted(broker, 'alice', 'pw', ['alice/x', 'bob/x']), [1, 0x80], 'while it answers: the documents decide')
  const client = await connect(`mqtt://127.0.0.1:${broker.port()}`, { clientId: 'acl-during-outage', username: 'alice', password: 'pw' })
  t.teardown(() => closeAll(client))
  await standin.kill()
  const grants = await client.subscribeAsync('bob/y', { qos: 1 })
  t.strictSame(grants.map((g) => g.qos), [1], 'server down: the ACL check is ignored and acl_nomatch = allow decides')
  t.equal(await connack(broker, { clientId: 'ign', username: 'alice', password: 'wrong' }), 0, 'server down: even a wrong password is passed on to allow_anonymous = true')
})

t.test('stand-in: server killed mid-run and restarted: refusals while it is down, recovery by itself, alarm cleared', async (t) => {
  const standin = await standinWithUsers(t)
  const broker = await node(t, standin, { 'auth.mongo.query_timeout': '1s' })
  t.equal(await connack(broker, { clientId: 'k1', username: 'alice', password: 'pw' }), 0, 'connected while the server runs')
  t.notOk(alarmed(broker), 'no alarm')

  await standin.kill()
  t.equal(await connack(broker, { clientId: 'k2', username: 'alice', password: 'pw' }), 3, 'killed: 3 server unavailable')
  t.equal(await connack(broker, { clientId: 'k3', username: 'alice', password: 'pw', protocolVersion: 5 }), 0x88, 'killed: 0x88')
  t.ok(alarmed(broker), 'alarm raised')
  t.ok(broker.node.listeners.length > 0, 'the node is still up')

  await standin.restart()
  await eventually(async () => await connack(broker, { clientId: 'k4', username: 'alice', password: 'pw' }) === 0, 'alice connects again')
  t.notOk(alarmed(broker), 'alarm cleared')
  t.equal(await connack(broker, { clientId: 'k5', username: 'alice', password: 'bad' }), 4, 'and decides again: a wrong password is denied')

  await standin.stop()
  t.equal(await connack(broker, { clientId: 'k6', username: 'alice', password: 'pw' }), 3, 'a graceful stop: refused the same way')
  await standin.restart()
  await eventually(async () => await connack(broker, { clientId: 'k7', username: 'alice', password: 'pw' }) === 0, 'alice connects after the second restart')
})

t.test('stand-in: a slow server (answers after the timeout): CONNECT is answered by the timeout, not by the server', async (t) => {
  const standin = await standinWithUsers(t)
  const broker = await node(t, standin, { 'auth.mongo.query_timeout': '300ms' })
  t.equal(await connack(broker, { clientId: 's0', username: 'alice', password: 'pw' }), 0, 'fast: connected')
  standin.slow(60_000)
  const finds = standin.commands('find').length
  t.equal(await connack(broker, { clientId: 's1', username: 'alice', password: 'pw' }), 3, 'slow: refused with 3 while the server holds its answer for a minute')
  t.ok(standin.commands('find').length > finds, 'the query reached the server')
  t.ok(alarmed(broker), 'a slow server is unavailable too: alarm raised')
  standin.slow(0)
  await eventually(async () => await connack(broker, { clientId: 's2', username: 'alice', password: 'pw' }) === 0, 'connects once the server is fast again')
  t.notOk(alarmed(broker), 'alarm cleared')
})

t.test('stand-in: 200 concurrent CONNECTs through a pool of 8 are all answered correctly', async (t) => {
  const standin = await standinWithUsers(t)
  const users = standin.collection('mqtt', 'mqtt_user')
  for (let i = 0; i < 200; i++) users.push({ username: `u${i}`, password: digest('sha256', `pw${i}`), is_superuser: i % 10 === 0 })
  const broker = await node(t, standin, { 'auth.mongo.query_timeout': '20s' })
  standin.slow(5, ['find']) // every query holds a pooled connection for a moment
  standin.resetPeak()
  const expected = (i: number): number => i % 3 === 0 ? 4 : i % 3 === 1 ? 0 : 5
  const password = (i: number): string => i % 3 === 0 ? 'wrong' : `pw${i}`
  const username = (i: number): string => i % 3 === 2 ? `ghost${i}` : `u${i}`
  const codes = await Promise.all(Array.from({ length: 200 }, async (_, i) =>
    await connack(broker, { clientId: `pool-${i}`, username: username(i), password: password(i) })))
  t.strictSame(codes, Array.from({ length: 200 }, (_, i) => expected(i)), 'each client got its own answer: allowed, wrong password (4) or unknown (5)')
  t.ok(standin.peakConnections <= 8 + 2, `at most the pool (8) and the driver's monitor connections were open at once (peak ${standin.peakConnections})`)
  t.notOk(alarmed(broker), 'no alarm: a busy pool is not an outage')
})

t.test('stand-in: unload closes every connection to the server and clears the alarm; reload connects again', async (t) => {
  const standin = await standinWithUsers(t)
  const broker = await node(t, standin, { 'auth.mongo.query_timeout': '500ms' })
  t.equal(await connack(broker, { clientId: 'u1', username: 'alice', password: 'pw' }), 0)
  t.ok(standin.connections > 0, 'the driver holds connections')
  await broker.node.plugins.unload('broker_auth_mongo')
  await eventually(async () => standin.connections === 0, 'the stand-in sees every connection closed')
  t.pass('no connection left open')
  t.equal(await connack(broker, { clientId: 'u2', username: 'alice', password: 'pw' }), 5, 'no plugin: allow_anonymous = false refuses')

  await standin.kill()
  await broker.node.plugins.load('broker_auth_mongo')
  t.equal(await connack(broker, { clientId: 'u3', username: 'alice', password: 'pw' }), 3, 'loaded again while the server is down')
  t.ok(alarmed(broker), 'alarm raised')
  await broker.node.plugins.unload('broker_auth_mongo')
  t.notOk(alarmed(broker), 'unloading clears the alarm')
  await standin.restart()
  await broker.node.plugins.load('broker_auth_mongo')
  t.equal(await connack(broker, { clientId: 'u4', username: 'alice', password: 'pw' }), 0, 'and works once the server is back')
})

t.test('stand-in: the driver\'s reason reaches the alarm: a refused connection and a server too old for the driver are told apart', async (t) => {
  const summary = (broker: TestBroker): string | undefined => broker.node.observability.alarms.present().find((a) => a.id === ALARM)?.summary
  const down = await standinWithUsers(t)
  await down.kill()
  const refused = await node(t, down, { 'auth.mongo.query_timeout': '2s' })
  t.equal(await connack(refused, { clientId: 'r1', username: 'alice', password: 'pw' }), 3, 'down: 3 server unavailable')
  t.match(summary(refused), /ECONNREFUSED 127\.0\.0\.1:\d+/, 'down: the alarm says the connection was refused')
  t.notMatch(summary(refused), /did not answer/, 'not the guard\'s timeout')

  // MongoDB 3.6 reports wire version 6; the driver speaks to 4.4 (9) and later
  const old = await MongoStandin.start({ maxWireVersion: 6, data: { mqtt: { mqtt_user: [{ username: 'alice', password: digest('sha256', 'pw') }] } } })
  t.teardown(() => old.kill())
  const tooOld = await node(t, old, { 'auth.mongo.query_timeout': '2s' })
  t.equal(await connack(tooOld, { clientId: 'o1', username: 'alice', password: 'pw' }), 3, 'too old: 3 server unavailable')
  t.match(summary(tooOld), /maximum wire version 6, but this version of the Node\.js Driver requires at least \d+/, 'too old: the alarm says the server is too old for the driver')
  t.ok(old.commands('hello').length + old.commands('ismaster').length > 0, 'the server answered the handshake (it is up, only too old)')
})
