// The user name as MongoDB stores it (issue 14 #8): with a case-insensitive
// collation on the users collection, `ALICE` finds alice's document and is
// then alice for the ACL documents, bans and listings. The real `mongodb`
// driver talks to the wire-protocol STAND-IN, not a real mongod.
import t, { type Test } from 'tap'
import type { MqttClient } from 'mqtt'
import type { BannedEntry } from '../../../lib/plugin-kit/testing.js'
import type { TestBroker } from '../../../test/helpers/broker.js'
import { connack, digest, granted, MongoStandin, startNode } from './standin-node.js'

const ban = (who: string): BannedEntry => ({ who, as: 'username', reason: 'test', desc: '', by: 'tests', until: Math.floor(Date.now() / 1000) + 600 })

async function standinWithAlice (t: Test): Promise<MongoStandin> {
  const standin = await MongoStandin.start()
  t.teardown(async () => { await standin.kill() })
  standin.collate('mqtt', 'mqtt_user', { locale: 'en', strength: 2 })
  standin.collection('mqtt', 'mqtt_user').push({ username: 'alice', password: digest('sha256', 'alice-pw') })
  // the ACL collection compares exactly: only the name alice finds these
  standin.collection('mqtt', 'mqtt_acl').push({ username: 'alice', subscribe: ['open/#'] })
  return standin
}

async function node (t: Test, standin: MongoStandin, settings: Record<string, string> = {}): Promise<TestBroker> {
  const broker = await startNode(standin, settings)
  t.teardown(() => broker.stop())
  return broker
}

t.test('ALICE gets in with alice\'s password and is alice for ACL documents, bans and listings', async (t) => {
  const standin = await standinWithAlice(t)
  const broker = await node(t, standin)
  t.same(await granted(broker, 'ALICE', 'alice-pw', ['secret/x', 'open/x'], 'u1'), [0x80, 1], 'alice\'s ACL documents apply to ALICE')
  const kept: MqttClient[] = []
  t.equal(await connack(broker, { clientId: 'u2', username: 'ALICE', password: 'alice-pw', keep: (c) => kept.push(c) }), 0)
  t.teardown(async () => { for (const c of kept) await c.endAsync(true) })
  t.equal(broker.node.service.connection('u2')[0]?.username, 'alice', 'ALICE is listed as alice')
  await broker.node.banned.add(ban('alice'))
  t.equal(await connack(broker, { clientId: 'u3', username: 'Alice', password: 'alice-pw', protocolVersion: 5 }), 0x8a, 'a ban on alice refuses Alice')
})

t.test('a selector whose user name field is not exactly %u keeps the name the client sent', async (t) => {
  const standin = await standinWithAlice(t)
  standin.collection('mqtt', 'mqtt_user').push({ login: 'user-bob', username: 'someone-else', password: digest('sha256', 'bob-pw') })
  const broker = await node(t, standin, { 'auth.mongo.auth_query.selector': 'login=user-%u', 'auth.mongo.super_query': 'off', 'auth.mongo.acl_query': 'off' })
  const kept: MqttClient[] = []
  t.equal(await connack(broker, { clientId: 'b1', username: 'BOB', password: 'bob-pw', keep: (c) => kept.push(c) }), 0)
  t.teardown(async () => { for (const c of kept) await c.endAsync(true) })
  t.equal(broker.node.service.connection('b1')[0]?.username, 'BOB')
})
