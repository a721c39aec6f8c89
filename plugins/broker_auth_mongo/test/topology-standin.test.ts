// auth.mongo.type (single, rs, sharded, unknown) and auth.mongo.login through
// the plugin on a real node; the real `mongodb` driver talks to the
// wire-protocol STAND-IN, which presents itself as a standalone server, a
// replica-set primary or a mongos — it is not a real mongod.
import t, { type Test } from 'tap'
import type { TestBroker } from '../../../test/helpers/broker.js'
import type { MongoStandinOptions } from '../../../test/helpers/servers/mongo-standin.js'
import { connack, digest, MongoStandin, startNode } from './standin-node.js'

const DATA = { mqtt: { mqtt_user: [{ username: 'alice', password: digest('sha256', 'pw') }] } }

async function standin (t: Test, options: MongoStandinOptions = {}): Promise<MongoStandin> {
  const server = await MongoStandin.start({ data: DATA, ...options })
  t.teardown(() => server.kill())
  return server
}

async function node (t: Test, server: MongoStandin, settings: Record<string, string>): Promise<TestBroker> {
  const broker = await startNode(server, { 'auth.mongo.query_timeout': '1s', ...settings })
  t.teardown(() => broker.stop())
  return broker
}

t.test('stand-in: type = rs with rs_set_name finds the primary of the set', async (t) => {
  const server = await standin(t, { topology: { kind: 'rs', setName: 'rs0' } })
  const broker = await node(t, server, { 'auth.mongo.type': 'rs', 'auth.mongo.rs_set_name': 'rs0' })
  t.equal(await connack(broker, { clientId: 'rs-1', username: 'alice', password: 'pw' }), 0)
  t.equal(await connack(broker, { clientId: 'rs-2', username: 'alice', password: 'no' }), 4)
})

t.test('stand-in: type = rs with another set name finds no server: unavailable (3)', async (t) => {
  const server = await standin(t, { topology: { kind: 'rs', setName: 'rs0' } })
  const broker = await node(t, server, { 'auth.mongo.type': 'rs', 'auth.mongo.rs_set_name': 'other' })
  t.equal(await connack(broker, { clientId: 'rs-x', username: 'alice', password: 'pw' }), 3)
})

t.test('stand-in: type = sharded and unknown take several mongos seeds; a seed that is down is passed over', async (t) => {
  const up = await standin(t, { topology: { kind: 'mongos' } })
  const down = await MongoStandin.start()
  await down.kill()
  for (const type of ['sharded', 'unknown']) {
    const broker = await node(t, up, { 'auth.mongo.type': type, 'auth.mongo.server': `${down.host},${up.host}` })
    t.equal(await connack(broker, { clientId: `${type}-1`, username: 'alice', password: 'pw' }), 0, type)
  }
})

t.test('stand-in: type = single talks to the one server even when it says it is a replica-set member', async (t) => {
  const server = await standin(t, { topology: { kind: 'rs', setName: 'rs0' } })
  const broker = await node(t, server, { 'auth.mongo.type': 'single' })
  t.equal(await connack(broker, { clientId: 'single-1', username: 'alice', password: 'pw' }), 0)
})

t.test('stand-in: auth.mongo.login / password / auth_source log in with SCRAM-SHA-256', async (t) => {
  const server = await standin(t, { users: [{ db: 'admin', user: 'broker', password: 'db secret' }] })
  const good = await node(t, server, { 'auth.mongo.login': 'broker', 'auth.mongo.password': 'db secret', 'auth.mongo.auth_source': 'admin' })
  t.equal(await connack(good, { clientId: 'login-1', username: 'alice', password: 'pw' }), 0, 'logged in: the queries run')
  t.ok(server.commands('saslStart').some((c) => c.db === 'admin' && c.command.mechanism === 'SCRAM-SHA-256'), 'SCRAM-SHA-256 against auth_source admin')

  const wrong = await node(t, server, { 'auth.mongo.login': 'broker', 'auth.mongo.password': 'guess', 'auth.mongo.auth_source': 'admin' })
  t.equal(await connack(wrong, { clientId: 'login-2', username: 'alice', password: 'pw' }), 3, 'a wrong database password: unavailable')
  t.ok(wrong.node.observability.alarms.present().some((a) => a.id === 'broker_auth_mongo_unavailable'), 'alarm raised')

  const none = await node(t, server, {})
  t.equal(await connack(none, { clientId: 'login-3', username: 'alice', password: 'pw' }), 3, 'no login on a server that needs one: unavailable')
})
