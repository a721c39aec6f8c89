// 200 clients connect at once through a pool of 2 connections: every one
// gets the answer its credentials deserve. Then a Sentinel: the plugin finds
// the master through it.
import { join } from 'node:path'
import t from 'tap'
import { startBroker } from '../../../test/helpers/broker.js'
import { concurrentConnects, connackCode } from '../../../test/helpers/servers/outcome.js'
import { startRedis, startSentinel } from '../../../test/helpers/servers/redis.js'
import { INSTALL_ROOT } from '../../../lib/plugin-kit/testing.js'

const SEED = join(INSTALL_ROOT, 'plugins/broker_auth_redis/seed.redis')

t.test('200 concurrent CONNECTs over a pool of 2: all answered correctly', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.close())
  await redis.seed(SEED)
  const broker = await startBroker({ 'mqtt.allow_anonymous': 'false' }, ['tcp'], undefined, {
    plugins: { broker_auth_redis: { 'auth.redis.server': `127.0.0.1:${redis.port}`, 'auth.redis.pool': 2 } }
  })
  t.teardown(() => broker.stop())
  const kinds = [
    { username: 'alice', password: 'alice-pw', expected: 0 },
    { username: 'bob', password: 'wrong', expected: 0x86 },
    { username: 'ghost', password: 'x', expected: 0x87 },
    { username: 'root', password: 'root-pw', expected: 0 }
  ]
  const { wrong, allowed } = await concurrentConnects(broker.port(), kinds)
  t.strictSame(wrong, [], 'every client got its own answer')
  t.equal(allowed, 100)
})

t.test('sentinel: the plugin asks the Sentinel for the master', async (t) => {
  const master = await startRedis({ password: 'master-pw' })
  t.teardown(() => master.close())
  await master.seed(SEED)
  const sentinel = await startSentinel({ masterPort: master.port, name: 'mymaster', masterPassword: 'master-pw' })
  t.teardown(() => sentinel.close())
  const broker = await startBroker({ 'mqtt.allow_anonymous': 'false' }, ['tcp'], undefined, {
    plugins: {
      broker_auth_redis: {
        'auth.redis.type': 'sentinel',
        'auth.redis.server': `127.0.0.1:${sentinel.port}`,
        'auth.redis.sentinel': 'mymaster',
        'auth.redis.password': 'master-pw'
      }
    }
  })
  t.teardown(() => broker.stop())
  t.equal(await connackCode(broker.port(), { username: 'alice', password: 'alice-pw' }), 0, 'allowed by the master\'s data')
  t.equal(await connackCode(broker.port(), { username: 'alice', password: 'nope' }), 4, 'denied')
  const clients = await master.cli('CLIENT', 'LIST')
  t.ok(clients.split('\n').filter((line) => line.includes('cmd=hmget') || line.includes('cmd=hget')).length > 0, 'the master served the commands')
})
