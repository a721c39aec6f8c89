// The plugin's parts without a node, over an in-memory store: the stored form
// and its checks, filter matching, each storage type behind the keeper
// (limits, expiry, clean), and the read-back at load (malformed, expired,
// oversized and surplus entries removed, never a crash).
import t from 'tap'
import { createLogger, memoryStore, type PluginStore, type RetainedMessage } from '../../../lib/plugin-kit/testing.js'
import { decode, encode } from '../codec.js'
import { DiscStorage } from '../disc.js'
import { Filters, validFilter } from '../filters.js'
import { Keeper, type KeeperSettings } from '../keeper.js'
import { MemoryStorage } from '../memory.js'
import type { Limits, Storage } from '../storage.js'
import { StoreOnlyStorage } from '../store-only.js'

const logger = createLogger('fatal', false)
const message = (topic: string, payload: string, extra: Partial<RetainedMessage> = {}): RetainedMessage => ({ topic, payload: Buffer.from(payload), qos: 1, ...extra })
const NO_LIMITS: Limits = { maxPayload: 0, maxCount: 0 }

async function all<T> (source: Iterable<T> | AsyncIterable<T>): Promise<T[]> {
  const out: T[] = []
  for await (const item of source) out.push(item)
  return out
}

const payloads = (messages: RetainedMessage[]): string[] => messages.map((m) => `${m.topic}=${m.payload.toString()}`)

type Opener = (store: PluginStore, limits: Limits) => Promise<Storage>
const STORAGES: Array<[string, Opener]> = [
  ['ram', async (store, limits) => await MemoryStorage.open(store, limits, logger)],
  ['disc', async (store, limits) => await DiscStorage.open(store, limits, logger)],
  ['disc_only', async (store, limits) => await StoreOnlyStorage.open(store, false, limits, logger)],
  ['cluster store', async (store, limits) => await StoreOnlyStorage.open(store, true, limits, logger)]
]

t.test('the stored form: every field round-trips; anything else is refused with a reason', async (t) => {
  const full = message('a/b', 'payload \u0000 bytes', {
    qos: 2,
    expiresAt: 1_900_000_000_000,
    properties: { payloadFormatIndicator: true, contentType: 'text/plain', responseTopic: 'reply/to', correlationData: Buffer.from([0, 1, 255]), userProperties: { k: 'v', many: ['1', '2'] } }
  })
  t.same(decode('a/b', encode(full)), full)
  t.same(decode('x', encode(message('x', 'p'))), message('x', 'p'), 'no expiry, no properties')
  const bad: Array<[string, string, RegExp]> = [
    ['a/+', encode(message('a/+', 'p')), /topic/],
    ['$SYS/brokers/x/version', encode(message('$SYS/x', 'p')), /topic/],
    ['', encode(message('', 'p')), /topic/],
    ['t', 'not json {', /JSON/],
    ['t', '[1,2]', /object/],
    ['t', '{"q":3,"p":"cA=="}', /QoS/],
    ['t', '{"q":1,"p":""}', /payload/],
    ['t', '{"q":1,"p":"***"}', /payload/],
    ['t', '{"q":1,"p":"cA==","x":"soon"}', /expiry/],
    ['t', '{"q":1,"p":"cA==","x":-5}', /expiry/],
    ['t', '{"q":1,"p":"cA==","extra":1}', /unknown fields extra/],
    ['t', '{"q":1,"p":"cA==","pr":{"contentType":7}}', /contentType/],
    ['t', '{"q":1,"p":"cA==","pr":{"userProperties":{"k":{"nested":1}}}}', /user properties/],
    ['t', '{"q":1,"p":"cA==","pr":{"topicAlias":3}}', /unknown properties/],
    ['t', '{"q":1,"p":"cA==","pr":{"correlationData":"%%"}}', /correlation/]
  ]
  for (const [topic, text, why] of bad) t.match(decode(topic, text), why, `${topic} ${text}`)
})

t.test('filters: wildcards, a count per matching filter, no wildcard-first match of a $ topic', async (t) => {
  const filters = new Filters(['a/#', 'a/+/c', '+/b/c', '#', '$x/#'])
  t.equal(filters.literal, false)
  t.equal(filters.count('a/b/c'), 4)
  t.equal(filters.count('a'), 2, '`a/#` matches its parent level')
  t.equal(filters.count('$x/b/c'), 1, 'only the filter naming $x matches it')
  t.equal(new Filters(['x/y', 'x/y']).count('x/y'), 2, 'a topic name filter twice counts twice')
  t.equal(new Filters(['x/y']).literal, true)
  for (const ok of ['a', 'a/+/b', '#', '+', 'a/#', '/', '$SYS/#']) t.ok(validFilter(ok), ok)
  for (const bad of ['', 'a/#/b', 'a+', 'a/b#', 'x\u0000y']) t.notOk(validFilter(bad), JSON.stringify(bad))
})

const settings = (over: Partial<KeeperSettings> = {}): () => KeeperSettings => {
  const value = { 'retainer.max_payload_size': 0, 'retainer.max_retained_messages': 0, 'retainer.expiry_interval': 0, ...over }
  return () => value
}

for (const [name, open] of STORAGES) {
  t.test(`${name}: store, replace, clear, match, limits, expiry, clean`, async (t) => {
    const store = memoryStore()
    const keeper = new Keeper(await open(store, NO_LIMITS), settings({ 'retainer.max_payload_size': 5, 'retainer.max_retained_messages': 3 }), logger)
    t.equal(await keeper.store(message('a/1', 'one')), true)
    t.equal(await keeper.store(message('a/2', 'two')), true)
    t.equal(await keeper.store(message('a/1', 'uno')), true, 'replaced')
    t.equal(await keeper.store(message('a/big', 'sixsix')), false, 'over max_payload_size')
    t.equal(keeper.count(), 2)
    t.same(payloads(await all(keeper.match(['a/#']))), ['a/1=uno', 'a/2=two'])
    t.same(payloads(await all(keeper.match(['a/1', 'a/none']))), ['a/1=uno'], 'topic name filters')
    t.same(payloads(await all(keeper.match(['a/+', '#']))).sort(), ['a/1=uno', 'a/1=uno', 'a/2=two', 'a/2=two'], 'once per matching filter')
    t.equal(await keeper.store(message('a/3', 'three')), true)
    t.equal(await keeper.store(message('a/4', 'four')), false, 'a new topic beyond max_retained_messages')
    t.equal(await keeper.store(message('a/3', 'tres')), true, 'a kept topic can be replaced at the limit')
    t.equal(await keeper.store(message('a/2', '')), true, 'an empty payload clears')
    t.equal(keeper.count(), 2)
    t.equal(await keeper.store(message('a/4', 'four')), true, 'room again')
    t.equal(keeper.count(), 3)
    await keeper.store(message('a/4', ''))

    t.equal(await keeper.store(message('e/1', 'gone', { expiresAt: Date.now() - 1 })), true)
    t.same(await all(keeper.match(['e/1'])), [], 'an expired message is not delivered…')
    t.equal(await keeper.storage.get('e/1'), undefined, '…and removed')
    t.equal(await keeper.store(message('e/2', 'soon', { expiresAt: Date.now() + 60_000 })), true)
    t.equal(await keeper.storage.sweep(Date.now() + 120_000), 1, 'the sweep removes what expired')

    t.equal(await keeper.clean('a/+'), 2)
    t.equal(keeper.count(), 0)
    await t.rejects(keeper.clean('a/#/b'), /not a topic filter/)
    await keeper.store(message('z', 'z'))
    t.equal(await keeper.clean(), 1)
    t.same(await all(keeper.storage.topics()), [])
    await keeper.storage.close()
  })
}

t.test('retainer.expiry_interval applies to a message without its own expiry; an MQTT 5 expiry is kept', async (t) => {
  const keeper = new Keeper(await MemoryStorage.open(memoryStore(), NO_LIMITS, logger), settings({ 'retainer.expiry_interval': 10_000 }), logger)
  const before = Date.now()
  await keeper.store(message('a', 'a'))
  await keeper.store(message('b', 'b', { expiresAt: before + 500_000 }))
  const [a, b] = await all(keeper.match(['a', 'b']))
  t.ok(a.expiresAt !== undefined && a.expiresAt >= before + 10_000 && a.expiresAt <= Date.now() + 10_000)
  t.equal(b.expiresAt, before + 500_000, 'the publisher\'s own expiry wins, as in EMQ X')
})

t.test('ram answers a PUBLISH without a promise; disc waits for the store', async (t) => {
  const ram = new Keeper(await MemoryStorage.open(memoryStore(), NO_LIMITS, logger), settings(), logger)
  t.equal(ram.store(message('a', 'a')), true)
  const disc = new Keeper(await DiscStorage.open(memoryStore(), NO_LIMITS, logger), settings(), logger)
  t.ok(disc.store(message('a', 'a')) instanceof Promise)
})

t.test('read back at load: malformed, expired, oversized and surplus entries are removed, the rest kept', async (t) => {
  for (const [name, open] of STORAGES) {
    const store = memoryStore()
    await store.put('good/1', encode(message('good/1', 'one')))
    await store.put('good/2', encode(message('good/2', 'two')))
    await store.put('good/3', encode(message('good/3', 'three')))
    await store.put('bad/json', '{"q":1,')
    await store.put('bad/+', encode(message('bad/+', 'wild')))
    await store.put('old', encode(message('old', 'old', { expiresAt: Date.now() - 1000 })))
    await store.put('big', encode(message('big', 'x'.repeat(100))))
    const storage = await open(store, { maxPayload: 50, maxCount: 2 })
    t.equal(storage.count(), 2, `${name}: max_retained_messages applied`)
    t.same(payloads(await all(storage.scan(() => true))), ['good/1=one', 'good/2=two'], `${name}: the first ones kept`)
    await storage.close()
    const left = (await all(store.entries())).map(([key]) => key)
    t.same(left, ['good/1', 'good/2'], `${name}: the rest removed from the store (ram: written back when it ends)`)
  }
})

t.test('ram: the store holds nothing while it runs; the set is written back when the load ends', async (t) => {
  const store = memoryStore()
  await store.put('kept', encode(message('kept', 'from before')))
  const ram = await MemoryStorage.open(store, NO_LIMITS, logger)
  t.same(await all(store.entries()), [], 'read into memory, then removed from the store: a crash cannot bring back a cleared message')
  ram.put(message('new', 'new'), 0)
  ram.remove('kept')
  await ram.close()
  t.same((await all(store.entries())).map(([key]) => key), ['new'], 'what was kept when it ended')
  const disc = await DiscStorage.open(store, NO_LIMITS, logger)
  t.same(payloads(await all(disc.scan(() => true))), ['new=new'], 'read by the next load (here disc: the switch from ram)')
})

t.test('disc: a malformed value met on a SUBSCRIBE is skipped and removed', async (t) => {
  const store = memoryStore()
  const disc = await DiscStorage.open(store, NO_LIMITS, logger)
  await disc.put(message('t/1', 'ok'), 0)
  await disc.put(message('t/2', 'ok'), 0)
  await store.put('t/2', 'garbage')
  t.same(payloads(await all(disc.scan(() => true))), ['t/1=ok'])
  t.equal(disc.count(), 1)
  t.equal(await store.get('t/2'), undefined)
})

t.test('the cluster store: the count and the limit are the store\'s (other nodes write to it)', async (t) => {
  const store = memoryStore()
  const node1 = new Keeper(await StoreOnlyStorage.open(store, true, NO_LIMITS, logger), settings({ 'retainer.max_retained_messages': 2 }), logger)
  const node2 = new Keeper(await StoreOnlyStorage.open(store, true, NO_LIMITS, logger), settings({ 'retainer.max_retained_messages': 2 }), logger)
  t.equal(await node1.store(message('a', 'a')), true)
  t.equal(await node2.store(message('b', 'b')), true)
  t.equal(await node1.store(message('c', 'c')), false, 'node 1 sees node 2\'s message in the count')
  t.equal(node1.count(), 2)
  t.same(payloads(await all(node2.match(['#']))), ['a=a', 'b=b'])
})
