// The plugin loaded by a real node, a real redis-server seeded with
// seed.redis, and real MQTT.js clients: allow, deny, ignore, superuser, the
// ACL hash, and a username that tries to inject Redis commands.
import { rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { startBroker, tempDir, type TestBroker } from '../../../test/helpers/broker.js'
import { closeAll, connect } from '../../../test/helpers/mqtt.js'
import { connackCode, granted, pubackCode } from '../../../test/helpers/servers/outcome.js'
import { startRedis, type RedisServer } from '../../../test/helpers/servers/redis.js'
import { INSTALL_ROOT } from '../../../lib/plugin-kit/testing.js'

const SEED = join(INSTALL_ROOT, 'plugins/broker_auth_redis/seed.redis')

let redis: RedisServer
let broker: TestBroker
let aclDir: string

t.before(async () => {
  redis = await startRedis({ password: 'redis-pw' })
  await redis.seed(SEED)
  aclDir = await tempDir('redis-acl-')
  // only fallback topics are allowed by the file: what the plugin ignores (a client with no ACL hash) falls through to it, then to deny
  await writeFile(join(aclDir, 'acl.conf'), '{allow, {user, "bob"}, subscribe, ["fallback/#"]}.\n{allow, {user, "carol"}, subscribe, ["fallback/#"]}.\n')
  broker = await startBroker({
    'mqtt.allow_anonymous': 'false',
    'mqtt.acl_nomatch': 'deny',
    'mqtt.acl_file': join(aclDir, 'acl.conf')
  }, ['tcp'], undefined, {
    plugins: {
      broker_auth_redis: { 'auth.redis.server': `127.0.0.1:${redis.port}`, 'auth.redis.password': 'redis-pw', 'auth.redis.pool': 2 }
    }
  })
})
t.teardown(async () => {
  await broker?.stop()
  await redis?.close()
  if (aclDir !== undefined) await rm(aclDir, { recursive: true, force: true })
})

const url = (): string => `mqtt://127.0.0.1:${broker.port()}`

t.test('allow, deny (wrong password), ignore (no such user)', async (t) => {
  for (const protocolVersion of [4, 5] as const) {
    t.equal(await connackCode(broker.port(), { protocolVersion, username: 'alice', password: 'alice-pw' }), 0, `v${protocolVersion} allowed`)
    t.equal(await connackCode(broker.port(), { protocolVersion, username: 'alice', password: 'wrong' }), protocolVersion === 5 ? 0x86 : 4, `v${protocolVersion} wrong password: denied`)
    t.equal(await connackCode(broker.port(), { protocolVersion, username: 'alice' }), protocolVersion === 5 ? 0x86 : 4, `v${protocolVersion} no password: denied`)
    // ignored by the plugin; no other plugin and anonymous access off: not authorized (not "bad password")
    t.equal(await connackCode(broker.port(), { protocolVersion, username: 'nobody', password: 'x' }), protocolVersion === 5 ? 0x87 : 5, `v${protocolVersion} unknown user: ignored`)
    t.equal(await connackCode(broker.port(), { protocolVersion }), protocolVersion === 5 ? 0x87 : 5, `v${protocolVersion} no username: ignored`)
  }
})

t.test('ACL hash mqtt_acl:<user>: field = filter, value 1 sub / 2 pub / 3 both; a hash without a match denies; no hash → acl.conf → acl_nomatch', async (t) => {
  const alice = await connect(url(), { protocolVersion: 5, clientId: 'alice-1', username: 'alice', password: 'alice-pw' })
  const bob = await connect(url(), { protocolVersion: 5, clientId: 'bob-1', username: 'bob', password: 'bob-pw' })
  t.teardown(() => closeAll(alice, bob))
  t.strictSame(await granted(alice, ['sensors/a/b', 'cmd/alice', 'chat/alice/room', 'exact/#', 'exact/a', 'other/x']),
    [1, 0x87, 1, 1, 0x87, 0x87], 'subscribe: 1 and 3 allow, 2 does not; %u; eq; unmatched')
  t.equal(await pubackCode(alice, 'cmd/alice'), 0, 'publish: access 2')
  t.equal(await pubackCode(alice, 'chat/alice/room'), 0, 'publish: access 3 with %u')
  t.equal(await pubackCode(alice, 'chat/bob/room'), 0x87, '%u is the client\'s own name')
  t.equal(await pubackCode(alice, 'sensors/a'), 0x87, 'publish: access 1 only subscribes')
  t.strictSame(await granted(bob, ['sensors/bob/x', 'sensors/alice/x', 'fallback/x']), [1, 0x87, 0x87], 'bob\'s own hash; fallback/x: bob has a hash and no field covers it, so acl.conf is not asked')
  await redis.cli('HSET', 'mqtt_user:carol', 'password', 'carol-pw')
  t.teardown(() => redis.cli('DEL', 'mqtt_user:carol'))
  const carol = await connect(url(), { protocolVersion: 5, clientId: 'carol-1', username: 'carol', password: 'carol-pw' })
  t.teardown(() => closeAll(carol))
  t.strictSame(await granted(carol, ['fallback/x', 'sensors/carol/x']), [1, 0x87], 'no hash: redis ignores, acl.conf allows fallback/x, acl_nomatch denies the rest')
})

t.test('superuser: is_superuser 1 passes every ACL check; others do not', async (t) => {
  const root = await connect(url(), { protocolVersion: 5, clientId: 'root-1', username: 'root', password: 'root-pw' })
  const alice = await connect(url(), { protocolVersion: 5, clientId: 'alice-2', username: 'alice', password: 'alice-pw' })
  t.teardown(() => closeAll(root, alice))
  t.strictSame(await granted(root, ['anything/#', 'other/x']), [1, 1])
  t.equal(await pubackCode(root, 'other/x'), 0)
  t.strictSame(await granted(alice, ['anything/#']), [0x87])
  t.equal(await connackCode(broker.port(), { username: 'root', password: 'wrong' }), 4, 'a superuser with a wrong password is denied')
})

t.test('a username cannot inject Redis commands or arguments', async (t) => {
  const before = await redis.cli('DBSIZE')
  const tricks = [
    'x password\r\nFLUSHALL',
    'alice password\r\nSET injected 1',
    '*3\r\n$3\r\nSET\r\n$8\r\ninjected\r\n$1\r\n1\r\n',
    'alice password\nFLUSHDB',
    'alice alice-pw',
    'alice\r\n'
  ]
  for (const username of tricks) {
    t.equal(await connackCode(broker.port(), { username, password: 'alice-pw' }), 5, `${JSON.stringify(username)}: not found, ignored`)
  }
  t.equal(await redis.cli('DBSIZE'), before, 'no key added or removed')
  t.equal(await redis.cli('EXISTS', 'injected'), '0')
  t.equal(await redis.cli('HGET', 'mqtt_user:alice', 'password'), 'alice-pw', 'data intact')
  t.equal(await connackCode(broker.port(), { username: 'alice', password: 'alice-pw' }), 0, 'alice still connects')
  await redis.cli('HSET', 'mqtt_user:sp ace', 'password', 'sp-pw')
  t.teardown(() => redis.cli('DEL', 'mqtt_user:sp ace'))
  t.equal(await connackCode(broker.port(), { username: 'sp ace', password: 'sp-pw' }), 0, 'a user name with a space is one key')
})
