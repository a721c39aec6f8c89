// The redis-server test harness itself: data, requirepass, kill -9 and a
// restart on the same port, and a Sentinel that names the master.
import t from 'tap'
import { startRedis, startSentinel } from '../../../test/helpers/servers/redis.js'

t.test('redis-server: requirepass, kill -9, restart on the same port', async (t) => {
  const redis = await startRedis({ password: 'pw' })
  t.teardown(() => redis.close())
  t.equal(await redis.cli('SET', 'a', '1'), 'OK')
  t.equal(await redis.cli('GET', 'a'), '1')
  await redis.kill()
  t.equal(redis.running, false)
  await redis.restart()
  t.equal(redis.running, true)
  t.equal(await redis.cli('GET', 'a'), '', 'no snapshot: the data is gone after kill -9')
  await redis.stop()
  t.equal(redis.running, false)
})

t.test('sentinel: monitors the master', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.close())
  const sentinel = await startSentinel({ masterPort: redis.port, name: 'mymaster' })
  t.teardown(() => sentinel.close())
  t.equal(await sentinel.cli('SENTINEL', 'get-master-addr-by-name', 'mymaster'), `127.0.0.1\n${redis.port}`)
})
