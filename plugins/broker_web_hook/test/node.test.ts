// The plugin on a real node, driven through the management API: listed,
// unloaded and loaded again; its settings changed (payload encodings, topic
// filters, TLS files) and a bad value refused with its file and line; an
// endpoint that is down (MQTT unaffected, drops counted, the alarm raised
// then cleared), one that is slow (the queue bounded, MQTT unaffected) and
// one that answers 500 (retried, then given up).
import { readdirSync } from 'node:fs'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { freePort, INSTALL_ROOT, startPluginNode, type MqttClient } from '../../../lib/plugin-kit/testing.js'
import { waitFor } from '../../../test/helpers/cluster.js'
import { startEndpoint, type Hit } from './endpoint.js'

const PLUGIN = 'broker_web_hook'
const ALARM = 'broker_web_hook_unavailable'
const PUBLISH_RULE = { 'web.hook.rule.message.publish.1': '{"action": "on_message_publish", "topic": "enc/#"}' }

const e = await startEndpoint()
t.teardown(e.close)
const node = await startPluginNode({
  plugin: PLUGIN,
  settings: { 'web.hook.api.url': e.url(), ...PUBLISH_RULE, 'web.hook.request.retry_interval': '50ms' },
  withApi: true
})
t.teardown(node.stop)
const NODE = node.node.name
const confFile = join(node.dataDir, 'etc', `${PLUGIN}.conf`)
const settings = async (values: Record<string, string | null>): Promise<{ status: number, body: unknown }> =>
  await node.http('PUT', `/nodes/${NODE}/plugin_configs/${PLUGIN}`, values)
const metric = (key: string): number | undefined => (node.node.service.metrics() as Record<string, number>)[key]
/** a counter of the loaded plugin (0 before its first event) */
const count = (key: string): number => metric(key) ?? 0
const alarmIds = async (): Promise<string[]> => ((await node.http('GET', `/alarms/${NODE}`)).body as Array<{ id: string }>).map((a) => a.id)
const topicIs = (topic: string) => (hit: Hit): boolean => hit.body.topic === topic

const pub = await node.mqtt({ clientId: 'pub' })
const sub = await node.mqtt({ clientId: 'sub' })
await sub.subscribeAsync('#', { qos: 1 })

/** Publishes `count` QoS 1 messages and resolves when the subscriber has every one: the MQTT path, whatever the endpoint does. */
async function traffic (client: MqttClient, topic: string, count: number): Promise<void> {
  let got = 0
  const all = new Promise<void>((resolve) => {
    const on = (t: string): void => {
      if (t === topic && ++got === count) {
        sub.off('message', on)
        resolve()
      }
    }
    sub.on('message', on)
  })
  await Promise.all(Array.from({ length: count }, async (_, n) => await client.publishAsync(topic, `m${n}`, { qos: 1 })))
  await all
}

/** The process's threads: the plugin's delivery thread is one of them while it is loaded. */
const threads = (): number => readdirSync('/proc/self/task').length

t.test('listed by the API with its description; unloaded and loaded again, its thread and connections gone', async (t) => {
  const { body: plugins } = await node.http('GET', `/nodes/${NODE}/plugins/`)
  t.match((plugins as Array<{ name: string }>).find((p) => p.name === PLUGIN), { name: PLUGIN, active: true, version: '0.1.0', description: /HTTP/ })
  await pub.publishAsync('enc/before', 'x', { qos: 1 })
  await e.waitFor(topicIs('enc/before'))
  t.ok(e.open > 0, 'a keep-alive connection to the endpoint is open')
  const loaded = threads()
  t.match(await node.http('PUT', `/nodes/${NODE}/plugins/${PLUGIN}/unload`), { status: 200 })
  t.notOk(node.node.hooks.owners('message.publish').includes(PLUGIN), 'its handlers are gone')
  t.equal(metric('webhook/sent'), undefined, 'its counters are gone')
  await waitFor(() => e.open === 0, 10_000, 'its connections closed')
  await waitFor(() => threads() === loaded - 1, 10_000, `its delivery thread ended (${loaded} threads loaded, ${threads()} now)`)
  await pub.publishAsync('enc/unloaded', 'x', { qos: 1 })
  t.match(await node.http('PUT', `/nodes/${NODE}/plugins/${PLUGIN}/load`), { status: 200 })
  t.equal(threads(), loaded, 'loaded again: one delivery thread')
  await pub.publishAsync('enc/loaded', 'x', { qos: 1 })
  await e.waitFor(topicIs('enc/loaded'))
  t.equal(e.hits.filter(topicIs('enc/unloaded')).length, 0, 'nothing posted while unloaded (the next message of the same client came)')
  t.equal(metric('webhook.message_publish'), 1, 'a new load counts from zero')
})

t.test('the topic filter of a rule; payload encodings none, base64 and base62', async (t) => {
  const bytes = Buffer.from([0xff, 0xff])
  await pub.publishAsync('other/topic', bytes, { qos: 1 })
  await pub.publishAsync('enc/none', bytes, { qos: 1 })
  t.equal((await e.waitFor(topicIs('enc/none'))).body.payload, '\ufffd\ufffd', 'none: UTF-8 text, bytes that are not UTF-8 as U+FFFD')
  const text = 'say "hi"\\\n\ttab \u0001'
  await pub.publishAsync('enc/none-escaped', text, { qos: 1 })
  t.equal((await e.waitFor(topicIs('enc/none-escaped'))).body.payload, text, 'none: quotes, backslashes and control characters escaped in the JSON')
  const large = 'abcdefghij'.repeat(30_000)
  await pub.publishAsync('enc/none-large', large, { qos: 1 })
  t.equal((await e.waitFor(topicIs('enc/none-large'))).body.payload, large, 'a 300 kB payload is posted whole')
  t.equal(e.hits.filter(topicIs('other/topic')).length, 0, 'a topic outside the rule\'s filter is not posted')

  t.match(await settings({ 'web.hook.encode_payload': 'base64' }), { status: 200 })
  await pub.publishAsync('enc/base64', bytes, { qos: 1 })
  t.equal((await e.waitFor(topicIs('enc/base64'))).body.payload, '//8=')

  t.match(await settings({ 'web.hook.encode_payload': 'base62' }), { status: 200 })
  await pub.publishAsync('enc/base62', Buffer.concat([Buffer.from('hi!'), bytes]), { qos: 1 })
  // 'hi!' is 26 6 36 33 (aGkh); 0xffff is 63 63 and 4 bits 15: 9C 9C P
  t.equal((await e.waitFor(topicIs('enc/base62'))).body.payload, 'aGkh9C9CP')
  t.match(await settings({ 'web.hook.encode_payload': null }), { status: 200 })
})

t.test('a bad value is refused: through the API (nothing changes), in the file (its file:line)', async (t) => {
  t.match(await settings({ 'web.hook.rule.message.publish.1': '{"action": "on_message_publish", "topic":' }), { status: 400, body: { code: 108, message: /not valid JSON/ } })
  t.match(await settings({ 'web.hook.rule.message.publish.2': '{"action": "on_message_publisher"}' }), { status: 400, body: { message: /unknown action "on_message_publisher"/ } })
  t.match(await settings({ 'web.hook.rule.session.created.1': '{"action": "on_session_created"}' }), { status: 400, body: { message: /the event one of client\.connect/ } })
  t.match(await settings({ 'web.hook.ssl.cacertfile': 'etc/certs/no-such-ca.pem' }), { status: 400, body: { message: /cannot read etc\/certs\/no-such-ca\.pem \(ENOENT\)/ } })
  t.match(await settings({ 'web.hook.pool_size': '0' }), { status: 400 })
  t.ok(node.node.plugins.isActive(PLUGIN), 'still loaded with its settings')

  await writeFile(confFile, [
    `web.hook.api.url = ${e.url()}`,
    '## a rule with a typo',
    'web.hook.rule.client.connected.1 = {"action": "on_client_connected",}',
    ''
  ].join('\n'))
  await t.rejects(node.node.plugins.reload(PLUGIN), { message: new RegExp(`^${confFile}:3: web\\.hook\\.rule\\.client\\.connected\\.1: the rule is not valid JSON`) })
  t.ok(node.node.plugins.isActive(PLUGIN), 'the running plugin keeps its settings')
  await writeFile(confFile, `web.hook.api.url = ${e.url()}\nweb.hook.headers.bad header = x\n`)
  await t.rejects(node.node.plugins.reload(PLUGIN), { message: new RegExp(`^${confFile}:2: `) }, 'a key the conf format cannot hold')
  await writeFile(confFile, `web.hook.api.url = ${e.url()}\nweb.hook.request.retry_interval = 50ms\n${Object.entries(PUBLISH_RULE).map(([k, v]) => `${k} = ${v}`).join('\n')}\n`)
  await node.node.plugins.reload(PLUGIN)
})

t.test('an endpoint that is down: MQTT unaffected, drops counted, the alarm raised, then cleared when it answers', async (t) => {
  const port = await freePort()
  t.match(await settings({ 'web.hook.api.url': `http://127.0.0.1:${port}/down`, 'web.hook.pool_size': '1', 'web.hook.queue_size': '5', 'web.hook.request.retry_times': '1', 'web.hook.request.retry_interval': '200ms' }), { status: 200 })
  await traffic(pub, 'enc/down', 50)
  t.ok(count('webhook/dropped') >= 30, `most events dropped (${metric('webhook/dropped')})`)
  await waitFor(async () => (await alarmIds()).includes(ALARM), 20_000, 'the alarm')
  const back = await startEndpoint({ port })
  t.teardown(back.close)
  await waitFor(async () => !(await alarmIds()).includes(ALARM), 30_000, 'the alarm cleared')
  await waitFor(() => count('webhook/sent') + count('webhook/failed') + count('webhook/dropped') === 50, 30_000, 'every event posted, given up or dropped')
  t.equal(back.hits.filter(topicIs('enc/down')).length, metric('webhook/sent'), 'what the endpoint got once it was back')
})

t.test('a slow endpoint: the queue stays bounded and MQTT is unaffected', async (t) => {
  const slow = await startEndpoint()
  t.teardown(slow.close)
  slow.answer(() => 'hang')
  t.match(await settings({ 'web.hook.api.url': slow.url(), 'web.hook.pool_size': '2', 'web.hook.queue_size': '10', 'web.hook.request.timeout': '30s' }), { status: 200 })
  const other = await node.mqtt({ clientId: 'pub-b' })
  await Promise.all([traffic(pub, 'enc/slow/a', 100), traffic(other, 'enc/slow/b', 100)])
  t.ok(slow.hits.length <= 2, `at most pool_size requests under way (${slow.hits.length})`)
  t.ok(count('webhook/dropped') >= 200 - 10 - 2, `all but queue_size + pool_size dropped (${metric('webhook/dropped')})`)
  slow.answer(() => 200)
  slow.release()
  await waitFor(() => count('webhook/sent') + count('webhook/dropped') === 200, 30_000, 'the queue drained')
})

t.test('an endpoint that answers 500: each event retried, then given up', async (t) => {
  const failing = await startEndpoint()
  t.teardown(failing.close)
  failing.answer(() => 500)
  t.match(await settings({ 'web.hook.api.url': failing.url(), 'web.hook.pool_size': null, 'web.hook.queue_size': null, 'web.hook.request.timeout': null, 'web.hook.request.retry_times': '2', 'web.hook.request.retry_interval': '20ms' }), { status: 200 })
  await traffic(pub, 'enc/500', 3)
  await waitFor(() => metric('webhook/failed') === 3, 20_000, 'three events given up')
  t.equal(failing.hits.length, 9, 'three attempts each')
  t.same(await alarmIds(), [], 'an endpoint that answers is not down')
})

t.test('TLS from the settings: the CA and the client certificate files', async (t) => {
  const certs = (file: string): string => join('etc/certs', file)
  const [cert, key, ca] = await Promise.all(['cert.pem', 'key.pem', 'cacert.pem'].map(async (f) => await readFile(join(INSTALL_ROOT, certs(f)), 'utf8')))
  const secure = await startEndpoint({ tls: { cert, key, ca, requestCert: true } })
  t.teardown(secure.close)
  t.match(await settings({
    'web.hook.api.url': `https://localhost:${secure.port}/tls`,
    'web.hook.ssl.cacertfile': certs('cacert.pem'),
    'web.hook.ssl.certfile': certs('client-cert.pem'),
    'web.hook.ssl.keyfile': certs('client-key.pem')
  }), { status: 200 })
  await pub.publishAsync('enc/tls', 'secret', { qos: 1 })
  t.match(await secure.waitFor(topicIs('enc/tls')), { path: '/tls', peerCN: 'demo-client', body: { payload: 'secret' } })
})
