// The subscription module in a real node: MQTT 3.1.1 and 5 clients are
// subscribed on connect to their `%c` / `%u` filters (QoS, and for MQTT 5
// No Local and Retain Handling), through their ACL; hostile client ids and
// user names never yield a wildcard or a broken filter (that item is
// skipped, the others made); switched off live, new clients get nothing.
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import mqtt from 'mqtt'
import t, { type Test } from 'tap'
import { startPluginNode, tempDir, type IClientOptions, type MqttClient } from '../../../lib/plugin-kit/testing.js'
import { nextMessages, noMessageWithin } from '../../../test/helpers/mqtt.js'

const dir = await tempDir()
const acl = join(dir, 'acl.conf')
await writeFile(acl, '{deny, all, subscribe, ["secret/#"]}.\n{allow, all}.\n')
const harness = await startPluginNode({
  plugin: 'broker_modules',
  settings: {
    'module.presence': 'off',
    'module.subscription': 'on',
    'module.subscription.1.topic': 'inbox/%c',
    'module.subscription.1.qos': 1,
    'module.subscription.2.topic': 'users/%u/#',
    'module.subscription.2.qos': 2,
    'module.subscription.2.nl': 1,
    'module.subscription.2.rh': 2,
    'module.subscription.3.topic': 'secret/%c',
    'module.subscription.4.topic': 'all/news',
    'module.subscription.4.qos': 0
  },
  node: { 'mqtt.acl_file': acl, 'mqtt.cache_acl': 'false' },
  // retained messages are kept by broker_retainer (issue 17 #1), as on a new install
  others: { broker_retainer: {} },
  withApi: true
})
t.teardown(harness.stop)
const node = harness.node
const QUIET_MS = 800

const filters = (clientId: string): Record<string, number> =>
  Object.fromEntries(node.service.clientSubscriptions(clientId).map((s) => [s.topic, s.qos]))

/** Waits until the client holds `count` subscriptions (made after its CONNACK), then a little more for any that should not come. */
async function subscribed (clientId: string, count: number): Promise<Record<string, number>> {
  const deadline = Date.now() + 10_000
  while (Object.keys(filters(clientId)).length < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
  await new Promise((resolve) => setTimeout(resolve, 200))
  return filters(clientId)
}

const publisher = await harness.mqtt({ clientId: 'publisher' })
await publisher.publishAsync('users/u1/retained', 'kept-1', { qos: 1, retain: true })
await publisher.publishAsync('users/u2/retained', 'kept-2', { qos: 1, retain: true })

t.test('MQTT 3.1.1: the filters with the client id and user name, QoS as set, the ACL refuses one; no MQTT 5 options', async (t) => {
  const client = await harness.mqtt({ clientId: 'dev-1', username: 'u1', protocolVersion: 4 })
  t.same(await subscribed('dev-1', 3), { 'inbox/dev-1': 1, 'users/u1/#': 2, 'all/news': 0 }, 'secret/dev-1 refused by the ACL')
  await expectOwn(t, client, 'users/u1/x', true, 'No Local is MQTT 5 only: a 3.1.1 client gets its own message back')
  const got = nextMessages(client, 1, 10_000)
  await publisher.publishAsync('inbox/dev-1', 'hello', { qos: 1 })
  t.match(await got, [{ topic: 'inbox/dev-1', payload: 'hello', qos: 1 }])
})

t.test('MQTT 3.1.1: the retained message of a filter arrives (Retain Handling is MQTT 5 only)', async (t) => {
  t.equal(await retainedOnConnect(t, { clientId: 'dev-1b', username: 'u1', protocolVersion: 4 }, 'users/u1/retained', true), 'kept-1')
})

t.test('MQTT 5: No Local and Retain Handling 2 from the item', async (t) => {
  t.equal(await retainedOnConnect(t, { clientId: 'dev-2b', username: 'u2', protocolVersion: 5 }, 'users/u2/retained', false), undefined, 'rh = 2: no retained message on subscribe')
  const client = await harness.mqtt({ clientId: 'dev-2', username: 'u2', protocolVersion: 5 })
  t.same(await subscribed('dev-2', 3), { 'inbox/dev-2': 1, 'users/u2/#': 2, 'all/news': 0 })
  await expectOwn(t, client, 'users/u2/x', false, 'nl = 1: its own message does not come back')
  const got = nextMessages(client, 1, 10_000)
  await publisher.publishAsync('users/u2/y', 'from another', { qos: 2 })
  t.match(await got, [{ topic: 'users/u2/y', payload: 'from another', qos: 2 }])
})

t.test('hostile client ids and user names: the item is skipped, never a wildcard or a broken filter', async (t) => {
  const cases: Array<[string, string | undefined, Record<string, number>]> = [
    ['+', 'ok', { 'users/ok/#': 2, 'all/news': 0 }],
    ['#', 'ok', { 'users/ok/#': 2, 'all/news': 0 }],
    ['a/b', 'ok', { 'users/ok/#': 2, 'all/news': 0 }],
    ['x+y', undefined, { 'all/news': 0 }],
    ['fine-1', '+', { 'inbox/fine-1': 1, 'all/news': 0 }],
    ['fine-2', '#', { 'inbox/fine-2': 1, 'all/news': 0 }],
    ['fine-3', 'a/b', { 'inbox/fine-3': 1, 'all/news': 0 }],
    ['fine-4', '', { 'inbox/fine-4': 1, 'all/news': 0 }],
    ['fine-5', undefined, { 'inbox/fine-5': 1, 'all/news': 0 }]
  ]
  for (const [clientId, username, expected] of cases) {
    const version = clientId.length % 2 === 0 ? 4 : 5
    await harness.mqtt({ clientId, username, protocolVersion: version })
    t.same(await subscribed(clientId, Object.keys(expected).length), expected, `client id ${JSON.stringify(clientId)}, user name ${JSON.stringify(username)} (v${version})`)
  }
  const wide = await harness.mqtt({ clientId: '#', username: 'ok' })
  await subscribed('#', 2)
  const quiet = noMessageWithin(wide, QUIET_MS)
  await publisher.publishAsync('inbox/someone-else', 'not for #', { qos: 1 })
  t.ok(await quiet, 'client id # did not get inbox/#')
})

t.test('switched off at run time: new clients are not subscribed; on again: they are', async (t) => {
  const put = async (value: string): Promise<void> => {
    t.equal((await harness.http('PUT', `/nodes/${node.name}/plugin_configs/broker_modules`, { 'module.subscription': value })).status, 200)
  }
  const registrations = node.plugins.registrations('broker_modules')
  await put('off')
  await harness.mqtt({ clientId: 'late-1', username: 'u3' })
  t.same(await subscribed('late-1', 0), {})
  await put('on')
  await harness.mqtt({ clientId: 'late-2', username: 'u3' })
  t.same(await subscribed('late-2', 3), { 'inbox/late-2': 1, 'users/u3/#': 2, 'all/news': 0 })
  t.equal(node.plugins.registrations('broker_modules'), registrations, 'applied live, no reload')
})

t.test('unloaded, nothing is subscribed on connect', async (t) => {
  t.equal((await harness.http('PUT', `/nodes/${node.name}/plugins/broker_modules/unload`)).status, 200)
  await harness.mqtt({ clientId: 'after-unload', username: 'u4' })
  t.same(await subscribed('after-unload', 0), {})
})

/** Collects what the client receives; `until(topic)` waits (10 s at most) for a message on it. */
function inbox (client: MqttClient): { seen: Array<[string, string]>, until: (topic: string) => Promise<void> } {
  const seen: Array<[string, string]> = []
  client.on('message', (topic, payload) => seen.push([topic, payload.toString()]))
  return {
    seen,
    until: async (topic) => {
      const deadline = Date.now() + 10_000
      while (!seen.some(([got]) => got === topic) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }
}

/** Publishes to `topic` from the client itself, then from another client (a marker): whether its own came back before the marker. */
async function expectOwn (t: Test, client: MqttClient, topic: string, back: boolean, message: string): Promise<void> {
  const box = inbox(client)
  await client.publishAsync(topic, 'own', { qos: 1 })
  await publisher.publishAsync(topic, 'marker', { qos: 1 })
  // a QoS 1 PUBACK comes once the message is routed: its own copy, if any, is queued before the marker
  await box.until(topic)
  t.same(box.seen.filter(([got]) => got === topic).map(([, payload]) => payload), back ? ['own', 'marker'] : ['marker'], message)
}

/**
 * Connects a client listening from the start (before its CONNACK): the retained message on `topic` it got,
 * waiting for it when `expected`, else until a marker sent to its inbox after its subscriptions came.
 */
async function retainedOnConnect (t: Test, options: IClientOptions, topic: string, expected: boolean): Promise<string | undefined> {
  const client = mqtt.connect(harness.url(), { ...options, reconnectPeriod: 0 })
  t.teardown(() => client.end(true))
  const box = inbox(client)
  await subscribed(options.clientId!, 3)
  await publisher.publishAsync(`inbox/${options.clientId!}`, 'marker', { qos: 1 })
  await box.until(expected ? topic : `inbox/${options.clientId!}`)
  return box.seen.find(([got]) => got === topic)?.[1]
}
