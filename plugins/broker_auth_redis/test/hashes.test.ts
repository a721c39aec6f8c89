// Every password_hash form against the users of seed.redis, one node at a
// time (the plugin holds one set of connections per process), and an
// ignored user passing on to anonymous access.
import { join } from 'node:path'
import t from 'tap'
import { startBroker } from '../../../test/helpers/broker.js'
import { connackCode } from '../../../test/helpers/servers/outcome.js'
import { startRedis, type RedisServer } from '../../../test/helpers/servers/redis.js'
import { INSTALL_ROOT } from '../../../lib/plugin-kit/testing.js'

let redis: RedisServer
t.before(async () => {
  redis = await startRedis()
  await redis.seed(join(INSTALL_ROOT, 'plugins/broker_auth_redis/seed.redis'))
})
t.teardown(async () => { await redis?.close() })

const WITH_SALT = 'HMGET mqtt_user:%u password salt'
const CASES: Array<[hash: string, user: string, authCmd?: string]> = [
  ['plain', 'alice'],
  ['md5', 'md5'],
  ['sha', 'sha'],
  ['sha256', 'sha256'],
  ['sha512', 'sha512'],
  ['bcrypt', 'plainbcrypt'],
  ['salt,sha256', 'saltfirst', WITH_SALT],
  ['sha256,salt', 'saltlast', WITH_SALT],
  ['salt,md5', 'saltmd5', WITH_SALT],
  ['salt,bcrypt', 'bcrypt', WITH_SALT],
  ['pbkdf2,sha256,1000,20', 'pbkdf2', WITH_SALT]
]

for (const [hash, user, authCmd] of CASES) {
  t.test(`password_hash = ${hash}`, async (t) => {
    const settings: Record<string, string> = { 'auth.redis.server': `127.0.0.1:${redis.port}`, 'auth.redis.password_hash': hash }
    if (authCmd !== undefined) settings['auth.redis.auth_cmd'] = authCmd
    const broker = await startBroker({ 'mqtt.allow_anonymous': 'false' }, ['tcp'], undefined, { plugins: { broker_auth_redis: settings } })
    t.teardown(() => broker.stop())
    t.equal(await connackCode(broker.port(), { username: user, password: `${user}-pw` }), 0, 'right password')
    t.equal(await connackCode(broker.port(), { username: user, password: `${user}-pX` }), 4, 'wrong password')
    if (authCmd !== undefined) {
      // the stored hash was made with the salt: without it (or with it on the wrong side) nothing matches
      const other = CASES.find(([h, , cmd]) => cmd !== undefined && h !== hash && !h.includes('bcrypt') && !hash.includes('bcrypt') && h !== 'pbkdf2,sha256,1000,20')
      if (other !== undefined) t.equal(await connackCode(broker.port(), { username: other[1], password: `${other[1]}-pw` }), 4, `${other[1]} (${other[0]}) does not pass as ${hash}`)
    }
  })
}

t.test('a salted hash with an auth_cmd that reads no salt denies', async (t) => {
  const broker = await startBroker({ 'mqtt.allow_anonymous': 'false' }, ['tcp'], undefined, {
    plugins: { broker_auth_redis: { 'auth.redis.server': `127.0.0.1:${redis.port}`, 'auth.redis.password_hash': 'salt,sha256' } }
  })
  t.teardown(() => broker.stop())
  t.equal(await connackCode(broker.port(), { username: 'saltfirst', password: 'saltfirst-pw' }), 4)
})

t.test('ignore hands the client to the next step (anonymous access on); deny ends the chain', async (t) => {
  const broker = await startBroker({ 'mqtt.allow_anonymous': 'true' }, ['tcp'], undefined, {
    plugins: { broker_auth_redis: { 'auth.redis.server': `127.0.0.1:${redis.port}` } }
  })
  t.teardown(() => broker.stop())
  t.equal(await connackCode(broker.port(), { username: 'nobody', password: 'x' }), 0, 'ignored, then anonymous')
  t.equal(await connackCode(broker.port(), { username: 'alice', password: 'wrong' }), 4, 'denied')
})
