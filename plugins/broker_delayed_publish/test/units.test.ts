// The parts without a node: the topic form, the stored record and its
// re-check, the due index, and the keeper on a fake context (its store in
// memory, real timers): publishing when due and not before, the limit,
// deletion, restore of what is stored, steps past setTimeout's limit, and two
// keepers racing over one store for the messages of a node that left.
import t from 'tap'
import { clientInfo, fakeContext, memoryStore, type PluginContext, type PublishMessage, type PublishRequest } from '../../../lib/plugin-kit/testing.js'
import plugin, { type DelayedConfig } from '../index.js'
import { DueIndex } from '../due-index.js'
import { DelayedMessages, type KeeperDeps } from '../keeper.js'
import { decode, dueOf, encode, isId, newId, propertiesAt, type DelayedMessage } from '../record.js'
import { MAX_DELAY_S, parseDelayed } from '../topic.js'
import { schema } from '../settings.js'

t.test('$delayed/<seconds>/<topic>: the forms taken and the ones refused', async (t) => {
  t.same(parseDelayed('$delayed/10/a/b'), { ok: true, delay: 10, topic: 'a/b' })
  t.same(parseDelayed('$delayed/0/x'), { ok: true, delay: 0, topic: 'x' })
  t.same(parseDelayed(`$delayed/${MAX_DELAY_S}/x`), { ok: true, delay: 4294967, topic: 'x' })
  t.same(parseDelayed('$delayed/5//lead'), { ok: true, delay: 5, topic: '/lead' }, 'a topic may start with /')
  t.same(parseDelayed('$delayed/5/$other/x'), { ok: true, delay: 5, topic: '$other/x' })
  for (const [topic, why] of [
    ['$delayed/10', /no topic/],
    ['$delayed/', /no topic/],
    ['$delayed/10/', /empty/],
    ['$delayed//x', /not a whole number/],
    ['$delayed/abc/x', /not a whole number/],
    ['$delayed/-1/x', /not a whole number/],
    ['$delayed/1.5/x', /not a whole number/],
    ['$delayed/+5/x', /not a whole number/],
    ['$delayed/ 5/x', /not a whole number/],
    ['$delayed/4294968/x', /over 4294967/],
    ['$delayed/99999999999/x', /not a whole number/],
    ['$delayed/10/a/+', /wildcard/],
    ['$delayed/10/#', /wildcard/],
    ['$delayed/10/$delayed/5/x', /delayed again/],
    ['$delayed/10/a\u0000b', /U\+0000/]
  ] as const) {
    const parsed = parseDelayed(topic)
    t.equal(parsed.ok, false, topic)
    if (!parsed.ok) t.match(parsed.why, why, topic)
  }
})

t.test('the setting: a whole number from 0', async (t) => {
  t.equal(schema.validate({}).value?.['delayed.max_delayed_messages'], 0)
  t.equal(schema.validate({ 'delayed.max_delayed_messages': '15' }).value?.['delayed.max_delayed_messages'], 15)
  for (const bad of ['-1', 'many', '1.5']) t.ok(schema.validate({ 'delayed.max_delayed_messages': bad }).error, bad)
  t.ok(schema.validate({ 'delayed.max_delayd_messages': '1' }).error, 'an unknown key')
})

const message = (fields: Partial<DelayedMessage> = {}): DelayedMessage => ({
  topic: 'a/b', payload: Buffer.from('hello'), qos: 1, retain: false, node: 'n1', delay: 1, publishAt: 1_700_000_000_000, expectedAt: 1_700_000_001_000, ...fields
})

t.test('records: ids sort by due time; what is stored decodes back; a bad record says why', async (t) => {
  const early = newId(1_700_000_000_000)
  const late = newId(1_700_000_000_001)
  t.ok(isId(early) && early < late, 'string order is due order')
  t.equal(dueOf(late), 1_700_000_000_001)
  const full = message({
    retain: true,
    fromClientId: 'pub',
    fromUsername: 'alice',
    properties: { messageExpiryInterval: 60, contentType: 'text/plain', correlationData: Buffer.from([0, 1, 2]), userProperties: { a: '1', b: ['2', '3'] }, payloadFormatIndicator: true, responseTopic: 'reply/here' }
  })
  const id = newId(full.expectedAt)
  t.same(decode(id, encode(full)), { message: full })
  t.same(decode(id, encode(message({ expectedAt: full.expectedAt }))), { message: message({ expectedAt: full.expectedAt }) })

  const stored = JSON.parse(encode(full)) as Record<string, unknown>
  const bad = (changes: Record<string, unknown>, key = id): string => {
    const decoded = decode(key, JSON.stringify({ ...stored, ...changes }))
    return 'why' in decoded ? decoded.why : 'decoded'
  }
  t.match(bad({}, 'not-an-id'), /not a delayed message id/)
  t.match(bad({}, newId(full.expectedAt + 1)), /does not match the due time/)
  t.match(bad({ topic: 'a/#' }), /wildcard/)
  t.match(bad({ topic: '' }), /empty/)
  t.match(bad({ qos: 3 }), /qos/)
  t.match(bad({ qos: '1' }), /qos/)
  t.match(bad({ retain: 'yes' }), /retain/)
  t.match(bad({ payload: '***' }), /payload/)
  t.match(bad({ delay: MAX_DELAY_S + 1 }), /delay/)
  t.match(bad({ publish_at: full.expectedAt + 1 }), /before it was taken in/)
  t.match(bad({ v: 2 }), /v/)
  t.match(bad({ node: undefined }), /node/)
  t.match(bad({ extra: 1 }), /extra/)
  t.match(bad({ properties: { messageExpiryInterval: -1 } }), /messageExpiryInterval/)
  t.match(bad({ properties: { userProperties: { a: 1 } } }), /userProperties/)
  const notJson = decode(id, '{"v":1')
  t.match('why' in notJson ? notJson.why : '', /not JSON/)
})

t.test('the expiry interval counts from the original publish', async (t) => {
  const m = message({ publishAt: 1000, properties: { messageExpiryInterval: 10, contentType: 'x' } })
  t.same(propertiesAt(m, 1000 + 4_000), { properties: { messageExpiryInterval: 6, contentType: 'x' } })
  t.same(propertiesAt(m, 1000 + 9_500), { properties: { messageExpiryInterval: 1, contentType: 'x' } }, 'a part second left is a second')
  t.equal(propertiesAt(m, 1000 + 10_000), undefined, 'expired')
  t.same(propertiesAt(message({ properties: { messageExpiryInterval: 0 } }), Date.now()), { properties: { messageExpiryInterval: 0 } }, '0 never expires')
  t.same(propertiesAt(message(), Date.now()), { properties: undefined })
})

t.test('the due index gives the earliest pending id, and forgets removed ones', async (t) => {
  const index = new DueIndex()
  const ids = Array.from({ length: 3000 }, (_, i) => newId(1_700_000_000_000 + ((i * 7919) % 3000)))
  for (const id of ids) index.add(id)
  index.add(ids[0])
  t.equal(index.size, 3000, 'an id added twice is there once')
  const removed = new Set(ids.filter((_, i) => i % 3 !== 0))
  t.equal([...removed].filter((id) => index.remove(id)).length, 2000, 'each removed once')
  t.equal(index.remove(ids[1]), false, 'not pending any more')
  t.equal(index.size, 1000)
  const out: string[] = []
  for (let id = index.shift(); id !== undefined; id = index.shift()) out.push(id)
  t.same(out, ids.filter((id) => !removed.has(id)).sort(), 'the rest, in due order')
  t.equal(index.peek(), undefined)
})

interface Clock { waits: number[], run: () => void }

/** Keeper deps over a fake context; `published` collects what it publishes. */
function keeperOf (ctx: PluginContext<unknown>, node = 'n1', limit = 0, published: PublishRequest[] = []): { keeper: DelayedMessages, published: PublishRequest[], deps: KeeperDeps } {
  const deps: KeeperDeps = {
    store: ctx.store,
    timers: ctx.timers,
    publish: async (m) => { published.push(m) },
    cluster: ctx.cluster,
    node,
    logger: ctx.logger,
    limit: () => limit
  }
  return { keeper: new DelayedMessages(deps), published, deps }
}

async function until (what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

t.test('the keeper publishes each message when due, not before, and removes it from the store', async (t) => {
  const ctx = fakeContext('broker_delayed_publish', {})
  const { keeper, published } = keeperOf(ctx)
  t.teardown(async () => { await keeper.close() })
  const now = Date.now()
  t.equal(await keeper.takeIn(message({ topic: 'later', publishAt: now, expectedAt: now + 400 })), 'taken')
  t.equal(await keeper.takeIn(message({ topic: 'sooner', publishAt: now, expectedAt: now + 150 })), 'taken')
  t.equal(keeper.pending, 2)
  t.same(published, [], 'nothing at once')
  await until('sooner published', () => published.length >= 1)
  t.ok(Date.now() >= now + 150, 'not before its time')
  t.equal(published[0].topic, 'sooner')
  await until('later published', () => published.length >= 2)
  t.ok(Date.now() >= now + 400)
  t.match(published, [{ topic: 'sooner', qos: 1, retain: false }, { topic: 'later' }])
  t.same((await keeper.list(0, 10)).count, 0, 'the store is empty')
  t.equal(keeper.pending, 0)
})

t.test('the limit counts what this node holds, takes in flight included', async (t) => {
  const ctx = fakeContext('broker_delayed_publish', {})
  const { keeper } = keeperOf(ctx, 'n1', 2)
  t.teardown(async () => { await keeper.close() })
  const later = Date.now() + 60_000
  const answers = await Promise.all([1, 2, 3].map(async () => await keeper.takeIn(message({ expectedAt: later, publishAt: Date.now() }))))
  t.same(answers.sort(), ['quota', 'taken', 'taken'])
  const { entries } = await keeper.list(0, 10)
  t.equal(await keeper.remove(entries[0].id), true)
  t.equal(await keeper.remove(entries[0].id), false, 'gone already')
  t.equal(await keeper.takeIn(message({ expectedAt: later, publishAt: Date.now() })), 'taken', 'room again')
})

t.test('a deleted message is never published', async (t) => {
  const ctx = fakeContext('broker_delayed_publish', {})
  const { keeper, published } = keeperOf(ctx)
  t.teardown(async () => { await keeper.close() })
  const now = Date.now()
  await keeper.takeIn(message({ topic: 'deleted', publishAt: now, expectedAt: now + 200 }))
  await keeper.takeIn(message({ topic: 'kept', publishAt: now, expectedAt: now + 300 }))
  const { entries } = await keeper.list(0, 10)
  t.same(entries.map((e) => e.message.topic), ['deleted', 'kept'], 'listed in due order')
  await keeper.remove(entries[0].id)
  await until('kept published', () => published.length >= 1)
  t.same(published.map((m) => m.topic), ['kept'])
})

t.test('a scan indexes what this node owns, publishes what is overdue, skips malformed records and takes over those of nodes that left', async (t) => {
  const map = new Map<string, string>()
  const now = Date.now()
  const put = (m: DelayedMessage): string => {
    const id = newId(m.expectedAt)
    map.set(id, encode(m))
    return id
  }
  put(message({ topic: 'overdue', publishAt: now - 5000, expectedAt: now - 1000 }))
  put(message({ topic: 'mine', publishAt: now, expectedAt: now + 200 }))
  const gone = put(message({ topic: 'orphan', node: 'gone@host', publishAt: now, expectedAt: now + 250 }))
  put(message({ topic: 'peer', node: 'peer@host', publishAt: now, expectedAt: now + 100 }))
  put(message({ topic: 'expired', publishAt: now - 10_000, expectedAt: now - 5000, properties: { messageExpiryInterval: 2 } }))
  map.set(newId(now + 100), '{"v":1,"topic":"a/#"}')
  map.set('junk', 'x')
  const ctx = fakeContext('broker_delayed_publish', {})
  ;(ctx as { store: unknown }).store = memoryStore(map)
  ctx.clusterNodes = ['n1', 'peer@host']
  const { keeper, published } = keeperOf(ctx)
  t.teardown(async () => { await keeper.close() })
  t.same(await keeper.scan(), { owned: 3, adopted: 1, malformed: 2 })
  t.match(JSON.parse(map.get(gone) ?? '{}'), { node: 'n1' }, 'the orphan is this node\'s now')
  await until('overdue, mine and orphan published', () => published.length >= 3)
  t.same(published.map((m) => m.topic), ['overdue', 'mine', 'orphan'], 'the expired one is dropped, the peer\'s left to the peer')
  t.same([...map.keys()].filter((k) => map.get(k)?.includes('"peer@host"')).length, 1, 'the peer\'s record stays')
  t.equal(map.size, 3, 'the peer\'s and the two malformed ones remain')
})

t.test('a delay past setTimeout\'s limit is waited in steps', async (t) => {
  const ctx = fakeContext('broker_delayed_publish', {})
  const clock: Clock = { waits: [], run: () => {} }
  const { deps, published } = keeperOf(ctx)
  const keeper = new DelayedMessages({
    ...deps,
    timers: {
      setTimeout: (run, ms) => {
        clock.waits.push(ms)
        clock.run = run
        return { cancel: () => {} }
      },
      setInterval: () => { throw new Error('no intervals') }
    }
  })
  t.teardown(async () => { await keeper.close() })
  const now = Date.now()
  await keeper.takeIn(message({ delay: MAX_DELAY_S, publishAt: now, expectedAt: now + MAX_DELAY_S * 1000 }))
  t.same(clock.waits, [2 ** 31 - 1], 'the longest wait setTimeout keeps, not an overflow that fires at once')
  clock.run()
  t.same(clock.waits, [2 ** 31 - 1, 2 ** 31 - 1], 'woken before its time: armed again for the next step')
  t.same(published, [], 'not published before its time')
  // a message due soon takes the timer over; when it fires due, it is published
  await keeper.takeIn(message({ topic: 'soon', publishAt: Date.now(), expectedAt: Date.now() + 20 }))
  t.ok(clock.waits[2] <= 20, 'armed for the earlier message')
  await new Promise((resolve) => setTimeout(resolve, 40))
  clock.run()
  await until('soon published', () => published.length === 1)
  t.equal(published[0].topic, 'soon')
  await until('armed for the long one again', () => clock.waits.length === 4)
  t.equal(clock.waits[3], 2 ** 31 - 1)
})

t.test('two nodes racing for the messages of a node that left: each message taken over and published once', async (t) => {
  const map = new Map<string, string>()
  const now = Date.now()
  for (let i = 0; i < 200; i++) {
    const m = message({ topic: `orphan/${i}`, node: 'gone@host', publishAt: now, expectedAt: now + 100 + (i % 10) })
    map.set(newId(m.expectedAt), encode(m))
  }
  const published: PublishRequest[] = []
  const keepers = ['a@host', 'b@host'].map((node) => {
    const ctx = fakeContext('broker_delayed_publish', {})
    ;(ctx as { store: unknown }).store = memoryStore(map)
    ctx.clusterNodes = ['a@host', 'b@host']
    return keeperOf(ctx, node, 0, published).keeper
  })
  t.teardown(async () => { for (const keeper of keepers) await keeper.close() })
  const reports = await Promise.all(keepers.map(async (keeper) => await keeper.scan()))
  t.equal(reports[0].adopted + reports[1].adopted, 200, 'every message taken over by one of them')
  await until('all published', () => published.length >= 200)
  await new Promise((resolve) => setTimeout(resolve, 200))
  t.equal(published.length, 200, 'no message twice')
  t.equal(new Set(published.map((m) => m.topic)).size, 200)
  t.equal(map.size, 0)
})

t.test('a publish that fails puts the record back for the next load', async (t) => {
  const ctx = fakeContext('broker_delayed_publish', {})
  const { deps } = keeperOf(ctx)
  let attempts = 0
  const errors: unknown[] = []
  const logger = Object.assign(Object.create(ctx.logger) as typeof ctx.logger, { error: (...args: unknown[]) => { errors.push(args) } })
  const keeper = new DelayedMessages({ ...deps, logger, publish: async () => { attempts++; throw new Error('engine closed') } })
  t.teardown(async () => { await keeper.close() })
  const now = Date.now()
  await keeper.takeIn(message({ publishAt: now, expectedAt: now + 50 }))
  await until('attempted and logged', () => attempts === 1 && errors.length === 1)
  t.match(errors[0], [{ err: { message: 'engine closed' } }, 'delayed message not published'])
  t.equal((await keeper.list(0, 10)).count, 1, 'back in the store')
  t.equal(keeper.pending, 0, 'not retried by this load')
  t.equal(attempts, 1)
})

t.test('the plugin on a fake context: the fold, a node that leaves, unload', async (t) => {
  const map = new Map<string, string>()
  const now = Date.now()
  const peers = message({ topic: 'peer/x', node: 'peer@host', publishAt: now, expectedAt: now + 100 })
  map.set(newId(peers.expectedAt), encode(peers))
  const ctx = fakeContext('broker_delayed_publish', schema.validate({}).value as DelayedConfig)
  ;(ctx as { store: unknown }).store = memoryStore(map)
  ctx.clusterNodes = [ctx.node.name, 'peer@host']
  await plugin.load(ctx)
  let unloaded = false
  t.teardown(async () => { if (!unloaded) await ctx.unload() })
  const fold = ctx.handler('message.publish')
  const client = clientInfo({ clientId: 'pub', username: 'u', mountpoint: 'm/' })
  const publishing = (topic: string, authorize: PublishMessage['authorize'] = () => true): PublishMessage => ({ topic, payload: Buffer.from('p'), qos: 1, retain: false, from: 'pub', client, authorize })

  t.equal(fold(publishing('plain/topic')), undefined, 'another topic: untouched, answered at once (no promise)')
  t.same(fold(publishing('$delayed/x/y')), { stop: 0x99, reason: 'the delay "x" is not a whole number of seconds from 0 to 4294967' }, 'malformed: at once')
  t.same(await fold(publishing('$delayed/1/no', async () => false)), { stop: 0x87, reason: 'not authorized to publish to no' }, 'an ACL answered later')
  t.same(await fold(publishing('$delayed/1/boom', async () => { throw new Error('acl down') })), { stop: 0x87, reason: 'the publish check failed' })
  t.same(await fold(publishing('$delayed/0/now')), { stop: 0 })

  await until('published at once', () => ctx.published.length === 1)
  t.match(ctx.published[0], { topic: 'm/now', qos: 1, retain: false }, 'under the publisher\'s mountpoint')
  t.same(map.size, 1, 'the peer\'s message waits for the peer')

  ctx.clusterNodes = [ctx.node.name]
  ctx.nodeLeft('peer@host')
  await until('the peer\'s message published here', () => ctx.published.length === 2)
  t.equal(ctx.published[1].topic, 'peer/x')

  await ctx.unload()
  unloaded = true
  t.equal(ctx.registrations(), 0, 'everything released')

  const broken = fakeContext('broker_delayed_publish', schema.validate({}).value as DelayedConfig)
  broken.store.put = async () => { throw new Error('disk full') }
  broken.logger.error = () => {}
  await plugin.load(broken)
  t.teardown(async () => { await broken.unload() })
  t.same(await broken.handler('message.publish')(publishing('$delayed/5/x')), { stop: 0x80, reason: 'not stored' }, 'a store that fails: 0x80')
})
