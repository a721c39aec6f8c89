// Redis down at start, killed mid-run and restarted: the node stays up,
// CONNECT is refused as "server unavailable" (MQTT 5 0x88, 3.x code 3), the
// alarm broker_auth_redis_unavailable is present, and the plugin recovers by
// itself when the server is back (alarm cleared).
import { join } from 'node:path'
import t from 'tap'
import { freePort, startBroker, type TestBroker } from '../../../test/helpers/broker.js'
import { connackCode } from '../../../test/helpers/servers/outcome.js'
import { startRedis } from '../../../test/helpers/servers/redis.js'
import { INSTALL_ROOT } from '../../../lib/plugin-kit/testing.js'

const SEED = join(INSTALL_ROOT, 'plugins/broker_auth_redis/seed.redis')
const ALARM = 'broker_auth_redis_unavailable'

const alarmed = (broker: TestBroker): boolean => broker.node.observability.alarms.present().some((a) => a.id === ALARM)

/** Retries until the client is allowed (the plugin reconnects by itself); fails after `ms`. */
async function allowedWithin (port: number, ms: number): Promise<number> {
  const end = Date.now() + ms
  let code = -1
  while (Date.now() < end) {
    code = await connackCode(port, { username: 'alice', password: 'alice-pw' })
    if (code === 0) return code
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return code
}

t.test('down at start: refused as server unavailable, alarm; recovers when it starts', async (t) => {
  const port = await freePort()
  const broker = await startBroker({ 'mqtt.allow_anonymous': 'false' }, ['tcp'], undefined, {
    plugins: { broker_auth_redis: { 'auth.redis.server': `127.0.0.1:${port}`, 'auth.redis.query_timeout': '2s' } }
  })
  t.teardown(() => broker.stop())
  t.equal(await connackCode(broker.port(), { protocolVersion: 5, username: 'alice', password: 'alice-pw' }), 0x88, 'MQTT 5: 0x88')
  t.equal(await connackCode(broker.port(), { protocolVersion: 4, username: 'alice', password: 'alice-pw' }), 3, 'MQTT 3.1.1: 3')
  t.equal(await connackCode(broker.port(), { protocolVersion: 3, protocolId: 'MQIsdp', username: 'alice', password: 'alice-pw' }), 3, 'MQTT 3.1: 3')
  t.ok(alarmed(broker), 'alarm raised')
  t.equal((await broker.node.plugins.list()).find((p) => p.name === 'broker_auth_redis')?.active, true, 'the plugin is loaded, the node up')

  const redis = await startRedis({ port })
  t.teardown(() => redis.close())
  await redis.seed(SEED)
  t.equal(await allowedWithin(broker.port(), 10000), 0, 'allowed once Redis is up')
  t.notOk(alarmed(broker), 'alarm cleared')
})

t.test('killed mid-run (-9) and restarted: refused meanwhile, recovers by itself', async (t) => {
  const redis = await startRedis()
  await redis.seed(SEED)
  const broker = await startBroker({ 'mqtt.allow_anonymous': 'false' }, ['tcp'], undefined, {
    plugins: { broker_auth_redis: { 'auth.redis.server': `127.0.0.1:${redis.port}`, 'auth.redis.query_timeout': '2s' } }
  })
  t.teardown(async () => {
    await broker.stop()
    await redis.close()
  })
  t.equal(await connackCode(broker.port(), { username: 'alice', password: 'alice-pw' }), 0)
  t.notOk(alarmed(broker))

  await redis.kill()
  t.equal(await connackCode(broker.port(), { protocolVersion: 5, username: 'alice', password: 'alice-pw' }), 0x88, 'server unavailable')
  t.ok(alarmed(broker), 'alarm raised')
  t.equal(await connackCode(broker.port(), { protocolVersion: 5, username: 'alice', password: 'wrong' }), 0x88, 'no deny without an answer')

  await redis.restart()
  await redis.seed(SEED) // kill -9 without snapshots lost the data
  t.equal(await allowedWithin(broker.port(), 10000), 0, 'allowed again')
  t.notOk(alarmed(broker), 'alarm cleared')
  t.equal(await connackCode(broker.port(), { username: 'alice', password: 'wrong' }), 4, 'deny works again')
})

t.test('unavailable.auth = ignore: the client goes on down the chain', async (t) => {
  const port = await freePort()
  const broker = await startBroker({ 'mqtt.allow_anonymous': 'true' }, ['tcp'], undefined, {
    plugins: { broker_auth_redis: { 'auth.redis.server': `127.0.0.1:${port}`, 'auth.redis.unavailable.auth': 'ignore' } }
  })
  t.teardown(() => broker.stop())
  t.equal(await connackCode(broker.port(), { username: 'alice', password: 'alice-pw' }), 0, 'anonymous')
  t.ok(alarmed(broker))
})
