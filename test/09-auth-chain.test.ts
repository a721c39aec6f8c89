// The auth chain (SPEC §5.2.3–5): plugins answer in data/loaded_plugins order,
// ignore falls through, mqtt.allow_anonymous decides when all ignore, and a
// superuser answer skips ACL checks — observed by real MQTT clients.
import { rm } from 'node:fs/promises'
import t from 'tap'
import { FIXTURE_PLUGINS, startBroker, tempDir, type TestBroker } from './helpers/broker.js'
import { closeAll, connect } from './helpers/mqtt.js'
import { RawClient } from './helpers/raw-client.js'

async function connackCode (broker: TestBroker, fields: { clientId: string, username?: string, password?: string }, version: 4 | 5 = 4): Promise<number> {
  const raw = await RawClient.open(broker.port(), version)
  try {
    const ack = await raw.connect({ ...fields, password: fields.password === undefined ? undefined : Buffer.from(fields.password) })
    return (version === 5 ? ack.reasonCode : ack.returnCode) ?? -1
  } finally {
    raw.end()
  }
}

const denyU = { 'fixture.auth': 'deny', 'fixture.users': 'u' }
const allowU = { 'fixture.auth': 'allow', 'fixture.users': 'u' }

t.test('the chain follows data/loaded_plugins order: reordering it changes the answer', async (t) => {
  const dataDir = await tempDir()
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  let broker = await startBroker({}, ['tcp'], dataDir, { pluginDirs: [FIXTURE_PLUGINS], plugins: { broker_fixture_a: denyU, broker_fixture_b: allowU } })
  t.equal(await connackCode(broker, { clientId: 'o1', username: 'u', password: 'p' }), 4, 'a (deny) before b (allow): refused, bad user name or password')
  t.equal(await connackCode(broker, { clientId: 'o1', username: 'u', password: 'p' }, 5), 0x86, 'MQTT 5: 0x86')
  await broker.stop()
  broker = await startBroker({}, ['tcp'], dataDir, { pluginDirs: [FIXTURE_PLUGINS], plugins: { broker_fixture_b: allowU, broker_fixture_a: denyU } })
  t.teardown(broker.stop)
  t.equal(await connackCode(broker, { clientId: 'o2', username: 'u', password: 'p' }), 0, 'b (allow) before a (deny): accepted')
})

t.test('ignore falls through to the next plugin, then to mqtt.allow_anonymous', async (t) => {
  for (const anonymous of [true, false]) {
    const broker = await startBroker({ 'mqtt.allow_anonymous': String(anonymous) }, ['tcp'], undefined, {
      pluginDirs: [FIXTURE_PLUGINS],
      plugins: { broker_fixture_a: { 'fixture.auth': 'deny', 'fixture.users': 'other' }, broker_fixture_b: allowU }
    })
    t.equal(await connackCode(broker, { clientId: 'f1', username: 'u' }), 0, 'a ignores u, b allows it')
    t.equal(await connackCode(broker, { clientId: 'f2', username: 'other' }), 4, 'a denies other')
    t.equal(await connackCode(broker, { clientId: 'f3', username: 'nobody' }), anonymous ? 0 : 5, `both ignore: allow_anonymous = ${anonymous}`)
    t.equal(await connackCode(broker, { clientId: 'f4' }, 5), anonymous ? 0 : 0x87, 'MQTT 5 without a user name')
    await broker.stop()
  }
})

t.test('a superuser skips ACL checks', async (t) => {
  const broker = await startBroker({ 'mqtt.acl_nomatch': 'deny', 'mqtt.acl_file': '/dev/null' }, ['tcp'], undefined, {
    pluginDirs: [FIXTURE_PLUGINS],
    plugins: { broker_fixture_a: { 'fixture.auth': 'superuser', 'fixture.users': 'root' } }
  })
  t.teardown(broker.stop)
  const url = `mqtt://127.0.0.1:${broker.port()}`
  const root = await connect(url, { clientId: 'root', username: 'root' })
  const plain = await connect(url, { clientId: 'plain', username: 'plain' })
  t.teardown(() => closeAll(root, plain))
  t.same((await root.subscribeAsync('any/#', { qos: 1 })).map((g) => g.qos), [1], 'the superuser may subscribe')
  await t.rejects(plain.subscribeAsync('any/#', { qos: 1 }), 'an ordinary user is refused by acl_nomatch = deny')
})
