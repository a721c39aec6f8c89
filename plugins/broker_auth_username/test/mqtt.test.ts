// With real MQTT.js clients on a node that loads the plugin from
// data/loaded_plugins: right password connects, wrong password is refused
// (3.1.1 CONNACK 4, 5.0 CONNACK 0x86), an unknown user falls through to
// mqtt.allow_anonymous, and a run-time user survives a node restart.
import { rm } from 'node:fs/promises'
import t from 'tap'
import { startBroker, tempDir, type TestBroker } from '../../../test/helpers/broker.js'
import { closeAll, connect } from '../../../test/helpers/mqtt.js'
import plugin, { type CredentialApi } from '../index.js'

const SETTINGS = { 'auth.user.1.username': 'alice', 'auth.user.1.password': 'alice-pw' }

/** A node with only this plugin loaded; a given `dataDir` is kept (for restarts). */
async function node (anonymous: boolean, dataDir?: string): Promise<TestBroker> {
  return await startBroker({ 'mqtt.allow_anonymous': String(anonymous) }, ['tcp'], dataDir, { plugins: { [plugin.name]: SETTINGS } })
}

/** Connects; resolves 0 on success (and disconnects), else the CONNACK code. */
async function connackCode (broker: TestBroker, username: string, password: string | undefined, protocolVersion: 4 | 5): Promise<number> {
  try {
    const client = await connect(`mqtt://127.0.0.1:${broker.port()}`, { username, password, protocolVersion, clientId: `c-${username}-${protocolVersion}` })
    await closeAll(client)
    return 0
  } catch (err) {
    return (err as { code?: number }).code ?? -1
  }
}

t.test('right password connects, wrong or missing is refused, unknown user is left to allow_anonymous', async (t) => {
  const open = await node(true)
  t.teardown(async () => await open.stop())
  t.ok(open.node.plugins.isActive(plugin.name), 'loaded from data/loaded_plugins')
  t.equal(await connackCode(open, 'alice', 'alice-pw', 4), 0)
  t.equal(await connackCode(open, 'alice', 'alice-pw', 5), 0)
  t.equal(await connackCode(open, 'alice', 'wrong', 4), 4, 'MQTT 3.1.1: bad user name or password')
  t.equal(await connackCode(open, 'alice', 'wrong', 5), 0x86, 'MQTT 5: bad user name or password')
  t.equal(await connackCode(open, 'alice', undefined, 4), 4, 'no password')
  t.equal(await connackCode(open, 'mallory', 'any', 4), 0, 'unknown user, anonymous allowed')
  await open.stop()

  const closed = await node(false)
  t.teardown(async () => await closed.stop())
  t.equal(await connackCode(closed, 'mallory', 'any', 4), 5, 'unknown user, anonymous off: not authorized')
  t.equal(await connackCode(closed, 'mallory', 'any', 5), 0x87)
  t.equal(await connackCode(closed, 'alice', 'alice-pw', 5), 0)
})

t.test('a user added at run time connects, also after a node restart', async (t) => {
  const dir = await tempDir()
  t.teardown(async () => await rm(dir, { recursive: true, force: true }))
  const first = await node(false, dir)
  const users = first.node.plugins.api<CredentialApi>(plugin.name)!
  t.same(await users.list(), ['alice'], "the host's API is the loaded instance's table")
  await users.add('carol', 'carol-pw')
  t.equal(await connackCode(first, 'carol', 'carol-pw', 4), 0)
  t.equal(await connackCode(first, 'carol', 'wrong', 4), 4)
  await first.stop()

  const second = await node(false, dir)
  t.teardown(async () => await second.stop())
  t.equal(await connackCode(second, 'carol', 'carol-pw', 5), 0, 'kept in the node store')
  t.equal(await connackCode(second, 'carol', 'wrong', 5), 0x86)
})
