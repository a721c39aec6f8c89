// The text stores' compare-and-swap (what a plugin store's `swap` is): on
// LevelDB and on a real redis-server, a swap takes effect only when the key
// holds the expected value, and of many racing swaps from one value exactly
// one wins.
import t, { type Test } from 'tap'
import { rm } from 'node:fs/promises'
import { Redis } from 'ioredis'
import { Level } from 'level'
import { levelTextStores, redisTextStores, type TextStore } from '../../lib/engine/text-store.js'
import { tempDir } from '../helpers/broker.js'
import { startRedis } from '../helpers/servers/redis.js'

async function checkSwap (t: Test, store: TextStore): Promise<void> {
  t.equal(await store.swap('k', undefined, 'one'), true, 'absent → set')
  t.equal(await store.swap('k', undefined, 'two'), false, 'expected absent, but present')
  t.equal(await store.get('k'), 'one')
  t.equal(await store.swap('k', 'nope', 'two'), false, 'another value expected')
  t.equal(await store.swap('k', 'one', 'two'), true)
  t.equal(await store.get('k'), 'two')
  t.equal(await store.swap('k', 'two', undefined), true, 'deleted')
  t.equal(await store.get('k'), undefined)
  t.equal(await store.swap('k', 'two', undefined), false, 'already gone')
  t.equal(await store.swap('empty', undefined, ''), true, 'an empty value is a value')
  t.equal(await store.swap('empty', undefined, 'x'), false)
  t.equal(await store.swap('empty', '', undefined), true)

  await store.put('race', 'start')
  const wins = await Promise.all(Array.from({ length: 20 }, async (_, i) => await store.swap('race', 'start', `winner-${i}`)))
  t.equal(wins.filter(Boolean).length, 1, 'one of twenty racing swaps wins')
  t.equal(await store.get('race'), `winner-${wins.indexOf(true)}`)
  // a put after a swap of the same key lands after it
  const swapped = store.swap('race', `winner-${wins.indexOf(true)}`, 'swapped')
  const put = store.put('race', 'put')
  t.equal(await swapped, true)
  await put
  t.equal(await store.get('race'), 'put')
}

t.test('LevelDB sections', async (t) => {
  const dir = await tempDir('text-store-')
  const db = new Level<string, Buffer>(dir, { valueEncoding: 'buffer' })
  await db.open()
  t.teardown(async () => {
    await db.close()
    await rm(dir, { recursive: true, force: true })
  })
  await checkSwap(t, levelTextStores(db)('swap_test'))
})

t.test('Redis hashes', async (t) => {
  const server = await startRedis()
  const redis = new Redis({ port: server.port, host: '127.0.0.1', lazyConnect: false })
  t.teardown(async () => {
    redis.disconnect()
    await server.close()
  })
  await checkSwap(t, redisTextStores(redis, 'swaptest')('s'))
  t.equal(await server.cli('HGET', 'swaptest:s', 'race'), 'put', 'the hash is <prefix>:<section>')
})
