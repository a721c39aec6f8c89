// ACL documents through the plugin on a real node with MQTT.js clients; the
// real `mongodb` driver talks to the wire-protocol STAND-IN, not a real mongod.
import t, { type Test } from 'tap'
import type { TestBroker } from '../../../test/helpers/broker.js'
import { closeAll, connect, nextMessages } from '../../../test/helpers/mqtt.js'
import { digest, granted, MongoStandin, startNode } from './standin-node.js'

let standin: MongoStandin
t.before(async () => {
  standin = await MongoStandin.start()
  for (const username of ['pub', 'sub', 'both', 'vars', 'open', 'multi', 'empty', 'root', 'plus', '$sys']) {
    standin.collection('mqtt', 'mqtt_user').push({ username, password: digest('sha256', 'pw'), is_superuser: username === 'root' })
  }
  standin.collection('mqtt', 'mqtt_acl').push(
    { username: 'pub', publish: ['sensors/+/temp', 'exact'] },
    { username: 'sub', subscribe: ['news/#'] },
    { username: 'both', pubsub: ['chat/room1'] },
    { username: 'vars', pubsub: ['users/%u/#', 'clients/%c/in', 'dev-%c/out'] },
    { username: 'plus', pubsub: ['%u/data', 'x-%u/data'] },
    { username: 'empty' },
    { username: 'root', subscribe: ['nothing'] },
    { username: '$sys', publish: ['only/this'] },
    { username: '$all', subscribe: ['broadcast/#'] },
    { clientid: 'special-client', publish: ['special/out'] }
  )
})
t.teardown(async () => { await standin.kill() })

async function node (t: Test, settings: Record<string, string> = {}, nodeSettings: Record<string, string> = {}): Promise<TestBroker> {
  const broker = await startNode(standin, settings, nodeSettings)
  t.teardown(() => broker.stop())
  return broker
}

/**
 * Whether a QoS 1 publish by `username` reaches a superuser subscribed to the
 * topic. No waiting on a clock: the PUBACK comes after routing, so once the
 * superuser's own marker message arrives, the user's message has arrived
 * before it or was dropped.
 */
async function delivered (broker: TestBroker, username: string, topic: string, clientId = `pub-${username}`): Promise<boolean> {
  const url = `mqtt://127.0.0.1:${broker.port()}`
  const watcher = await connect(url, { clientId: `watch-${clientId}`, username: 'root', password: 'pw' })
  const publisher = await connect(url, { clientId, username, password: 'pw' })
  try {
    await watcher.subscribeAsync(topic, { qos: 1 })
    const first = nextMessages(watcher, 1)
    await publisher.publishAsync(topic, 'from-user', { qos: 1 })
    await watcher.publishAsync(topic, 'marker', { qos: 1 })
    return (await first)[0].payload === 'from-user'
  } finally {
    await closeAll(watcher, publisher)
  }
}

t.test('stand-in: publish, subscribe and pubsub lists allow; a client with documents is denied the rest', async (t) => {
  const broker = await node(t)
  t.equal(await delivered(broker, 'pub', 'sensors/k1/temp'), true, 'publish list: sensors/+/temp')
  t.equal(await delivered(broker, 'pub', 'exact'), true, 'publish list: exact')
  t.equal(await delivered(broker, 'pub', 'sensors/k1/humidity'), false, 'not listed: denied (dropped)')
  t.strictSame(await granted(broker, 'pub', 'pw', ['sensors/k1/temp']), [0x80], 'a publish entry does not allow subscribing')

  t.strictSame(await granted(broker, 'sub', 'pw', ['news/#', 'news/eu/today', 'other']), [1, 1, 0x80], 'subscribe list: news/#')
  t.equal(await delivered(broker, 'sub', 'news/x'), false, 'a subscribe entry does not allow publishing')

  t.strictSame(await granted(broker, 'both', 'pw', ['chat/room1', 'chat/room2']), [1, 0x80], 'pubsub list: subscribe')
  t.equal(await delivered(broker, 'both', 'chat/room1'), true, 'pubsub list: publish')
  t.strictSame(await granted(broker, 'empty', 'pw', ['anything']), [0x80], 'a document with no lists allows nothing')
})

t.test('stand-in: a client without any ACL document is ignored (acl.conf, then acl_nomatch decide)', async (t) => {
  standin.collection('mqtt', 'mqtt_user').push({ username: 'nodoc', password: digest('sha256', 'pw') })
  const allowing = await node(t)
  t.strictSame(await granted(allowing, 'nodoc', 'pw', ['whatever/x']), [1], 'acl_nomatch = allow')
  const denying = await node(t, {}, { 'mqtt.acl_nomatch': 'deny', 'mqtt.acl_file': '/dev/null' })
  t.strictSame(await granted(denying, 'nodoc', 'pw', ['whatever/x']), [0x80], 'acl_nomatch = deny')
  t.strictSame(await granted(denying, 'sub', 'pw', ['news/x']), [1], 'while a listed topic is allowed by the plugin')
})

t.test('stand-in: %u and %c in listed topics', async (t) => {
  const broker = await node(t)
  t.strictSame(await granted(broker, 'vars', 'pw', ['users/vars/#', 'users/other/#', 'clients/cid-9/in', 'clients/cid-8/in', 'dev-cid-9/out', 'dev-cid-8/out'], 'cid-9'),
    [1, 0x80, 1, 0x80, 1, 0x80], '%u = user name, %c = client id, whole level or inside one')
  t.equal(await delivered(broker, 'vars', 'users/vars/a/b', 'cid-10'), true, 'publish under users/%u/#')
})

t.test('stand-in: a user name holding wildcards cannot widen a %u rule', async (t) => {
  standin.collection('mqtt', 'mqtt_user').push({ username: '+', password: digest('sha256', 'pw') }, { username: '#', password: digest('sha256', 'pw') })
  standin.collection('mqtt', 'mqtt_acl').push({ username: '+', pubsub: ['%u/data', 'x-%u/data'] }, { username: '#', pubsub: ['%u/data'] })
  const broker = await node(t)
  t.strictSame(await granted(broker, '+', 'pw', ['plus/data', 'x-plus/data']), [0x80, 0x80], 'user "+": %u is the literal name, never a wildcard')
  t.strictSame(await granted(broker, '#', 'pw', ['plus/data', 'anything']), [0x80, 0x80], 'user "#"')
  t.strictSame(await granted(broker, 'plus', 'pw', ['plus/data', 'x-plus/data']), [1, 1], 'an ordinary name still works')
})

t.test('stand-in: several selectors (acl_query.selector.1, .2 …) are ORed in one query', async (t) => {
  const broker = await node(t, {
    'auth.mongo.acl_query.selector.1': 'username=%u',
    'auth.mongo.acl_query.selector.2': 'username=$all',
    'auth.mongo.acl_query.selector.3': 'clientid=%c'
  })
  standin.seen.length = 0
  t.strictSame(await granted(broker, 'sub', 'pw', ['news/x', 'broadcast/y', 'other']), [1, 1, 0x80], 'own document and the $all document')
  const query = standin.commands('find').find((c) => c.command.find === 'mqtt_acl')
  t.strictSame(query?.command.filter, { $or: [{ username: 'sub' }, { username: '$all' }, { clientid: 'sub-sub' }] }, 'one find with $or')
  t.equal(await delivered(broker, 'multi', 'special/out', 'special-client'), true, 'the clientid selector finds the client\'s document')
  t.equal(await delivered(broker, 'multi', 'special/out', 'plain-client'), false, 'another client id gets only the $all document: denied')
})

t.test('stand-in: a superuser is never asked about; a $-user name is not checked by the plugin; acl_query = off adds no check', async (t) => {
  const broker = await node(t, {}, { 'mqtt.acl_nomatch': 'allow' })
  standin.seen.length = 0
  t.strictSame(await granted(broker, 'root', 'pw', ['anything/at/all']), [1], 'root (is_superuser) passes')
  t.notOk(standin.commands('find').some((c) => c.command.find === 'mqtt_acl'), 'no ACL query for the superuser')
  t.equal(await delivered(broker, '$sys', 'not/listed'), true, 'a user name starting with $: ignored, then acl_nomatch = allow')

  const off = await node(t, { 'auth.mongo.acl_query': 'off' })
  standin.seen.length = 0
  t.strictSame(await granted(off, 'pub', 'pw', ['not/listed']), [1], 'acl_query = off: acl_nomatch decides')
  t.notOk(standin.commands('find').some((c) => c.command.find === 'mqtt_acl'), 'no ACL query')
})

t.test('stand-in: a denied publish is dropped while the publisher stays connected (MQTT 3.1.1)', async (t) => {
  const broker = await node(t)
  const url = `mqtt://127.0.0.1:${broker.port()}`
  const publisher = await connect(url, { clientId: 'p-drop', username: 'pub', password: 'pw' })
  t.teardown(() => closeAll(publisher))
  t.equal(await delivered(broker, 'pub', 'forbidden/t', 'p-drop-2'), false, 'not delivered')
  await publisher.publishAsync('forbidden/t', 'no', { qos: 1 })
  t.ok(publisher.connected, 'the PUBACK came and the client is still connected')
})
