// ACL (SPEC §5.3) with real clients: acl.conf subjects and topics, the reply
// to a denied subscribe and publish, plugin ACL before the file, the cache
// and its cleaning, reload, $SYS, and mountpoints.
import { rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import type { IPublishPacket, IPubackPacket, ISubackPacket } from 'mqtt-packet'
import { engineClient } from '../lib/engine/internals.js'
import { clientState } from '../lib/access/client-state.js'
import { FIXTURE_PLUGINS, startBroker, tempDir, type StartOptions, type TestBroker } from './helpers/broker.js'
import { closeAll, connect, nextMessages, noMessageWithin } from './helpers/mqtt.js'
import { RawClient } from './helpers/raw-client.js'

async function brokerWithRules (t: { teardown: (fn: () => unknown) => void }, rules: string, settings: Record<string, string> = {}, options: StartOptions = {}): Promise<{ broker: TestBroker, file: string }> {
  const dir = await tempDir()
  const file = join(dir, 'acl.conf')
  await writeFile(file, rules)
  const broker = await startBroker({ 'mqtt.acl_file': file, 'mqtt.acl_nomatch': 'deny', ...settings }, ['tcp'], undefined, options)
  t.teardown(async () => { await broker.stop(); await rm(dir, { recursive: true, force: true }) })
  return { broker, file }
}

async function granted (broker: TestBroker, clientId: string, username: string | undefined, topics: string[], version: 4 | 5 = 4): Promise<number[]> {
  const raw = await RawClient.open(broker.port(), version)
  try {
    await raw.connect({ clientId, username })
    raw.send({ cmd: 'subscribe', messageId: 1, subscriptions: topics.map((topic) => ({ topic, qos: 1 as const })) })
    return (await raw.next('suback') as ISubackPacket).granted as number[]
  } finally {
    raw.end()
  }
}

t.test('every acl.conf subject form and topic form decides a real SUBSCRIBE', async (t) => {
  const { broker } = await brokerWithRules(t, [
    '{allow, {user, "alice"}, subscribe, ["alice/#"]}.',
    '{allow, {client, "c-7"}, subscribe, ["c7/+"]}.',
    '{allow, {ipaddr, "127.0.0.0/8"}, subscribe, ["local/#"]}.',
    '{allow, {ipaddr, "10.0.0.0/8"}, subscribe, ["remote/#"]}.',
    '{allow, {\'and\', [{user, "bob"}, {client, "bob-1"}]}, subscribe, ["both"]}.',
    '{allow, {\'or\', [{user, "carol"}, {client, "carol-x"}]}, subscribe, ["either"]}.',
    '{allow, all, subscribe, ["users/%u/#", "clients/%c"]}.',
    '{allow, all, subscribe, [{eq, "lit/#"}]}.',
    '{deny, all}.'
  ].join('\n'))
  t.same(await granted(broker, 'x1', 'alice', ['alice/a/b', 'bob/a']), [1, 0x80], 'user: only that filter is refused, with 0x80')
  t.same(await granted(broker, 'c-7', undefined, ['c7/x', 'c8/x']), [1, 0x80], 'client')
  t.same(await granted(broker, 'x2', undefined, ['local/y', 'remote/y']), [1, 0x80], 'ipaddr CIDR')
  t.same(await granted(broker, 'bob-1', 'bob', ['both']), [1], 'and: both match')
  t.same(await granted(broker, 'bob-2', 'bob', ['both']), [0x80], 'and: one does not')
  t.same(await granted(broker, 'carol-x', undefined, ['either']), [1], 'or: client')
  t.same(await granted(broker, 'x3', 'carol', ['either']), [1], 'or: user')
  t.same(await granted(broker, 'dev-9', 'dave', ['users/dave/t', 'users/erin/t', 'clients/dev-9', 'clients/dev-8']), [1, 0x80, 1, 0x80], '%u and %c')
  t.same(await granted(broker, 'x4', undefined, ['lit/#', 'lit/a']), [1, 0x80], '{eq, …} matches only the literal filter')
  t.same(await granted(broker, 'x5', 'alice', ['nope'], 5), [0x87], 'MQTT 5: 0x87 Not authorized')
})

t.test('a denied publish: MQTT 5 PUBACK 0x87, MQTT 3.1.1 acknowledged and dropped; the connection stays', async (t) => {
  const { broker } = await brokerWithRules(t, '{deny, all, publish, ["secret/#"]}.\n{allow, all}.\n')
  const watcher = await connect(`mqtt://127.0.0.1:${broker.port()}`, { clientId: 'watcher' })
  t.teardown(() => closeAll(watcher))
  await watcher.subscribeAsync('#', { qos: 1 })
  for (const version of [5, 4] as const) {
    const raw = await RawClient.open(broker.port(), version)
    t.teardown(() => raw.end())
    await raw.connect({ clientId: `pub-v${version}` })
    raw.send({ cmd: 'publish', topic: 'secret/x', payload: 'no', qos: 1, messageId: 5, retain: false, dup: false } as IPublishPacket)
    const ack = await raw.next('puback') as IPubackPacket
    t.equal(ack.reasonCode ?? 0, version === 5 ? 0x87 : 0, `v${version}: PUBACK reason`)
    t.ok(await noMessageWithin(watcher, 200), `v${version}: the message is not delivered`)
    const got = nextMessages(watcher, 1)
    raw.send({ cmd: 'publish', topic: 'open/x', payload: 'yes', qos: 1, messageId: 6, retain: false, dup: false } as IPublishPacket)
    t.equal((await got)[0].payload, 'yes', `v${version}: the connection still works`)
  }
})

t.test('clients can never publish into $SYS, not even a superuser', async (t) => {
  const { broker } = await brokerWithRules(t, '{allow, all}.\n', {}, {
    pluginDirs: [FIXTURE_PLUGINS], plugins: { broker_fixture_a: { 'fixture.auth': 'superuser', 'fixture.users': 'root' } }
  })
  const raw = await RawClient.open(broker.port(), 5)
  t.teardown(() => raw.end())
  await raw.connect({ clientId: 'root', username: 'root' })
  raw.send({ cmd: 'publish', topic: '$SYS/brokers/x', payload: 'fake', qos: 1, messageId: 1, retain: false, dup: false } as IPublishPacket)
  t.equal((await raw.next('puback') as IPubackPacket).reasonCode, 0x87)
})

t.test('plugin ACL answers come before the file; ignore falls through to it', async (t) => {
  const { broker } = await brokerWithRules(t, '{deny, all, subscribe, ["p/#", "q/#"]}.\n{allow, all}.\n', {}, {
    pluginDirs: [FIXTURE_PLUGINS], plugins: { broker_fixture_a: { 'fixture.acl': 'allow', 'fixture.acl_prefix': 'p/' } }
  })
  t.same(await granted(broker, 'pa', undefined, ['p/1', 'q/1', 'r/1']), [1, 0x80, 1])
})

t.test('the ACL cache: an answer is kept (even across a reload) until cleaned; off means every check is fresh', async (t) => {
  for (const cache of ['true', 'false']) {
    const { broker, file } = await brokerWithRules(t, '{allow, all}.\n', { 'mqtt.cache_acl': cache })
    const raw = await RawClient.open(broker.port(), 4)
    t.teardown(() => raw.end())
    await raw.connect({ clientId: `cache-${cache}` })
    const subscribe = async (messageId: number): Promise<number> => {
      raw.send({ cmd: 'subscribe', messageId, subscriptions: [{ topic: 'c/t', qos: 1 }] })
      return (await raw.next('suback') as ISubackPacket).granted[0] as number
    }
    t.equal(await subscribe(1), 1)
    await writeFile(file, '{deny, all}.\n')
    await broker.node.access.reload()
    t.equal(await subscribe(2), cache === 'true' ? 1 : 0x80, `cache ${cache}: after the rules change`)
    t.equal(broker.node.cleanAclCache(`cache-${cache}`, 'c/t'), true)
    t.equal(await subscribe(3), 0x80, `cache ${cache}: after cleaning the topic`)
    t.equal(broker.node.cleanAclCache('not-connected'), false, 'a client not connected here has no cache to clean')
  }
})

t.test('the ACL cache is bounded by mqtt.acl_cache_max_size', async (t) => {
  const { broker } = await brokerWithRules(t, '{allow, all}.\n', { 'mqtt.acl_cache_max_size': '3' })
  const client = await connect(`mqtt://127.0.0.1:${broker.port()}`, { clientId: 'bounded' })
  t.teardown(() => closeAll(client))
  for (const topic of ['a', 'b', 'c', 'd', 'e']) await client.publishAsync(topic, 'x', { qos: 1 })
  const state = clientState(engineClient(broker.node.engine, 'bounded')!)!
  t.same([...state.aclCache.keys()], ['p:c', 'p:d', 'p:e'], 'the oldest answers go first')
})

t.test('a broken rule file names the line; a failed reload keeps the rules in force', async (t) => {
  const { broker, file } = await brokerWithRules(t, '{allow, all}.\n')
  await writeFile(file, '{allow, all}.\n{allw, all}.\n')
  await t.rejects(broker.node.access.reload(), new RegExp(`^${file.replaceAll('.', '\\.')}:2: `))
  t.same(await granted(broker, 'still', undefined, ['x']), [1], 'the old rules still answer')
  const dir = await tempDir()
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  await writeFile(join(dir, 'bad.conf'), '%% rules\n{deny, {user, "x"}, publish}.\n')
  await t.rejects(startBroker({ 'mqtt.acl_file': join(dir, 'bad.conf') }), /bad\.conf:2: /, 'start-up stops on a broken file')
})

t.test('mountpoints prefix a client\'s topics both ways', async (t) => {
  const { broker } = await brokerWithRules(t, '{allow, all}.\n', {}, {
    pluginDirs: [FIXTURE_PLUGINS], plugins: { broker_fixture_a: { 'fixture.auth': 'allow', 'fixture.users': 'tenant', 'fixture.mountpoint': 'm/' } }
  })
  const url = `mqtt://127.0.0.1:${broker.port()}`
  const mounted = await connect(url, { clientId: 'mounted', username: 'tenant' })
  const plain = await connect(url, { clientId: 'plain' })
  t.teardown(() => closeAll(mounted, plain))
  await plain.subscribeAsync('m/#')
  await mounted.subscribeAsync('in/#')
  let got = nextMessages(plain, 1)
  await mounted.publishAsync('out/1', 'up', { qos: 1 })
  t.equal((await got)[0].topic, 'm/out/1', 'what it publishes lands under the mountpoint')
  got = nextMessages(mounted, 1)
  await plain.publishAsync('m/in/2', 'down', { qos: 1 })
  t.same([(await got)[0].topic, (await got)[0].payload], ['in/2', 'down'], 'what it receives has the mountpoint taken off')
  await mounted.unsubscribeAsync('in/#')
  await plain.publishAsync('m/in/3', 'after', { qos: 1 })
  t.ok(await noMessageWithin(mounted, 200), 'its UNSUBSCRIBE is mounted too')
})

t.test('zone.external.mountpoint with %c', async (t) => {
  const { broker } = await brokerWithRules(t, '{allow, all}.\n', { 'zone.external.mountpoint': 'dev/%c/' })
  const url = `mqtt://127.0.0.1:${broker.port()}`
  const a = await connect(url, { clientId: 'a1' })
  const b = await connect(url, { clientId: 'b1' })
  t.teardown(() => closeAll(a, b))
  await b.subscribeAsync('t')
  await a.subscribeAsync('t')
  const got = nextMessages(a, 1)
  await a.publishAsync('t', 'own tree', { qos: 1 })
  t.equal((await got)[0].payload, 'own tree')
  t.ok(await noMessageWithin(b, 200), 'another client lives in its own tree')
})
