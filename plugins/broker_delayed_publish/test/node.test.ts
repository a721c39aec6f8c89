// broker_delayed_publish in a real node with the management API: MQTT 3.1.1
// and 5 clients get the message after the delay and not before, with its
// properties; the reason codes of refusals; the limit; the API and broker_ctl
// listing and deleting; the counter; unload and load through the API; a
// restart (a message that fell due while the node was down is published at
// start, a malformed record is skipped); a bad setting refused with file:line.
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { startPluginNode, withPluginStore, type PluginNode } from '../../../lib/plugin-kit/testing.js'
import { noMessageWithin } from '../../../test/helpers/mqtt.js'
import { dueOf, newId } from '../record.js'
import { ackCode, record } from './recorder.js'

const PLUGIN = 'broker_delayed_publish'
const dir = await mkdtemp(join(tmpdir(), 'delayed-acl-'))
const aclFile = join(dir, 'acl.conf')
await writeFile(aclFile, '{deny, all, publish, ["forbidden/#"]}.\n{allow, all}.\n')
const node: PluginNode = await startPluginNode({ plugin: PLUGIN, withApi: true, node: { 'mqtt.acl_file': aclFile } })
t.teardown(async () => {
  await node.stop()
  await rm(dir, { recursive: true, force: true })
})
const name = node.node.name

interface Listed { items: Array<Record<string, unknown>>, meta: { count: number, limit: number, page: number } }
const listed = async (query = ''): Promise<Listed> => {
  const { status, body } = await node.http('GET', `/delayed${query}`)
  if (status !== 200) throw new Error(`GET /delayed${query}: ${status} ${JSON.stringify(body)}`)
  return body as Listed
}

t.test('MQTT 5: published after the delay, not before, with its QoS, retain flag and properties; the expiry counts from the publish', async (t) => {
  const sub = await node.mqtt({ clientId: 'sub5', protocolVersion: 5 })
  const got = record(sub)
  await sub.subscribeAsync({ 'd/#': { qos: 1, rap: true }, '$delayed/#': { qos: 1 } })
  const pub = await node.mqtt({ clientId: 'pub5', protocolVersion: 5, username: 'alice' })
  const sent = Date.now()
  const properties = { userProperties: { k: 'v' }, contentType: 'text/plain', correlationData: Buffer.from('corr'), responseTopic: 'reply/here', payloadFormatIndicator: true, messageExpiryInterval: 600 }
  t.equal(await ackCode(pub, '$delayed/2/d/v5', 'hello', { qos: 1, retain: true, properties }), 0x00, 'PUBACK success')
  t.equal(await ackCode(pub, '$delayed/1/d/qos2', 'two', { qos: 2 }), 0x00, 'PUBREC success')
  t.equal(await ackCode(pub, '$delayed/1/d/expires', 'gone', { qos: 1, properties: { messageExpiryInterval: 1 } }), 0x00)
  const { items } = await listed()
  t.match(items.find((i) => i.topic === 'd/v5'), { node: name, qos: 1, retain: true, from_clientid: 'pub5', from_username: 'alice', delayed_interval: 2 }, 'listed with its publisher')
  t.same(got.arrivals, [], 'nothing yet')

  const [two] = await got.on('d/qos2')
  t.ok(two.at - sent >= 1000, `not before its time (${two.at - sent} ms)`)
  t.equal(two.payload, 'two', 'a QoS 2 message too')
  const [v5] = await got.on('d/v5')
  t.ok(v5.at - sent >= 2000, `not before its time (${v5.at - sent} ms)`)
  t.match(v5, { payload: 'hello', qos: 1, retain: true })
  t.match(v5.properties, { userProperties: { k: 'v' }, contentType: 'text/plain', responseTopic: 'reply/here', payloadFormatIndicator: true })
  t.same((v5.properties?.correlationData as Buffer).toString(), 'corr')
  const left = v5.properties?.messageExpiryInterval as number
  t.ok(left > 0 && left <= 598, `the expiry interval is what was left of 600 s (${left})`)
  t.same(got.seen('d/expires'), [], 'a message that expired while it waited is dropped')
  t.equal(got.arrivals.filter((a) => a.topic.startsWith('$delayed')).length, 0, 'never delivered under $delayed/')
  t.equal((await listed()).meta.count, 0, 'nothing left')
})

t.test('MQTT 3.1.1: published after the delay; malformed ones are acknowledged and dropped', async (t) => {
  const sub = await node.mqtt({ clientId: 'sub3', protocolVersion: 4 })
  const got = record(sub)
  await sub.subscribeAsync(['v3/#', '$delayed/#'], { qos: 1 })
  const pub = await node.mqtt({ clientId: 'pub3', protocolVersion: 4 })
  const sent = Date.now()
  await pub.publishAsync('$delayed/1/v3/x', 'three', { qos: 1 })
  for (const topic of ['$delayed/abc/v3/bad', '$delayed/10', '$delayed/1/forbidden/x']) await pub.publishAsync(topic, 'bad', { qos: 1 })
  const [x] = await got.on('v3/x')
  t.ok(x.at - sent >= 1000, `not before its time (${x.at - sent} ms)`)
  t.match(x, { payload: 'three', qos: 1 })
  t.ok(await noMessageWithin(sub, 500), 'the refused ones are not delivered')
  t.equal(pub.connected, true, 'the 3.x publisher stays connected')
})

t.test('MQTT 5 refusals: 0x99 malformed, 0x87 not authorized; nothing delivered', async (t) => {
  const sub = await node.mqtt({ clientId: 'sub-refused', protocolVersion: 5 })
  await sub.subscribeAsync(['forbidden/#', 'x', '$delayed/#', 'ok/#'], { qos: 1 })
  const pub = await node.mqtt({ clientId: 'pub-refused', protocolVersion: 5 })
  for (const topic of ['$delayed/abc/x', '$delayed/10', '$delayed/10/', '$delayed//x', '$delayed/-1/x', '$delayed/4294968/x', '$delayed/1.5/x', '$delayed/1/$delayed/1/x']) {
    t.equal(await ackCode(pub, topic), 0x99, `${topic}: malformed`)
  }
  t.equal(await ackCode(pub, '$delayed/abc/x', 'x', { qos: 2 }), 0x99, 'PUBREC carries it too')
  t.equal(await ackCode(pub, '$delayed/1/forbidden/x'), 0x87, 'the ACL of the inner topic')
  t.equal(await ackCode(pub, '$delayed/1/$SYS/brokers/x'), 0x87, '$SYS stays the node\'s')
  t.equal(await ackCode(pub, `$delayed/4294967/ok/longest`), 0x00, 'the longest delay is taken')
  t.ok(await noMessageWithin(sub, 500), 'nothing delivered')
  const { items } = await listed()
  t.same(items.map((i) => i.topic), ['ok/longest'], 'only the good one is stored')
  t.equal((await node.http('DELETE', `/delayed/${items[0].msgid as string}`)).status, 200)
})

t.test('delayed.max_delayed_messages: over it 0x97; changed at run time without a reload', async (t) => {
  const pub = await node.mqtt({ clientId: 'pub-quota', protocolVersion: 5 })
  const setting = async (value: string): Promise<number> => (await node.http('PUT', `/nodes/${name}/plugin_configs/${PLUGIN}`, { 'delayed.max_delayed_messages': value })).status
  const registrations = node.node.plugins.registrations(PLUGIN)
  t.equal(await setting('2'), 200)
  t.equal(node.node.plugins.registrations(PLUGIN), registrations, 'no reload')
  t.equal(await ackCode(pub, '$delayed/600/q/1'), 0)
  t.equal(await ackCode(pub, '$delayed/600/q/2'), 0)
  t.equal(await ackCode(pub, '$delayed/600/q/3'), 0x97, 'quota exceeded')
  const { items } = await listed()
  t.equal(items.length, 2)
  t.equal((await node.http('DELETE', `/delayed/${items[0].msgid as string}`)).status, 200)
  t.equal(await ackCode(pub, '$delayed/600/q/4'), 0, 'room again after a delete')
  t.equal(await setting('0'), 200)
  t.equal(await ackCode(pub, '$delayed/600/q/5'), 0, '0 = no limit')
})

t.test('the API and broker_ctl list (paged, in due order), show and delete; the counter', async (t) => {
  for (const { msgid } of (await listed()).items) await node.http('DELETE', `/delayed/${msgid as string}`)
  const counted = async (): Promise<number> => ((await node.http('GET', `/nodes/${name}/metrics`)).body as Record<string, number>)['messages/delayed']
  const before = await counted()
  const pub = await node.mqtt({ clientId: 'pub-list', protocolVersion: 5 })
  const sub = await node.mqtt({ clientId: 'sub-list', protocolVersion: 5 })
  await sub.subscribeAsync('l/#', { qos: 1 })
  for (const delay of [500, 300, 400]) t.equal(await ackCode(pub, `$delayed/${delay}/l/${delay}`, `p${delay}`), 0)

  const all = await listed()
  t.same(all.items.map((i) => i.topic), ['l/300', 'l/400', 'l/500'], 'earliest due first')
  t.same(all.meta, { count: 3, limit: 10000, page: 1 })
  t.match(all.items[0], { msgid: /^[0-9a-f]{24}$/, node: name, qos: 1, retain: false, from_clientid: 'pub-list', delayed_interval: 300, publish_at: /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/, expected_at: /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/ })
  t.ok((all.items[0].delayed_remaining as number) > 250 && (all.items[0].delayed_remaining as number) <= 300)
  const second = await listed('?_page=2&_limit=2')
  t.same(second.items.map((i) => i.topic), ['l/500'])
  t.same(second.meta, { count: 3, limit: 2, page: 2 })
  t.equal((await node.http('GET', '/delayed?_page=0')).status, 400, 'a bad page')
  t.match((await node.http('GET', '/delayed?_limit=many')).body, { code: 108 })
  t.equal((await node.http('GET', '/delayed', undefined, { auth: null })).status, 401)

  const id = all.items[1].msgid as string
  t.match((await node.http('GET', `/delayed/${id}`)).body, { msgid: id, topic: 'l/400', payload: Buffer.from('p400').toString('base64') })
  t.equal((await node.http('GET', '/delayed/000000000000000000000000')).status, 404)
  t.equal((await node.http('GET', '/delayed/not-an-id')).status, 404)

  const list = await node.node.commands.run(['delayed', 'list'])
  t.match(list.text, new RegExp(`msgid=${all.items[0].msgid as string}, topic="l/300", qos=1, retain=false, from="pub-list", remaining=\\d+s`))
  t.equal(list.text.split('\n').length, 3)
  t.match(list.data, { count: 3, items: [{ topic: 'l/300' }, { topic: 'l/400' }, { topic: 'l/500' }] })
  t.same(await node.node.commands.run(['delayed', 'delete', id]), { text: 'ok', data: { deleted: id } })
  await t.rejects(node.node.commands.run(['delayed', 'delete', id]), /no delayed message/)
  await t.rejects(node.node.commands.run(['delayed', 'nonsense']), /delayed list \| delayed delete <MsgId>/)
  t.equal((await node.http('DELETE', `/delayed/${all.items[0].msgid as string}`)).body, 'ok')
  t.equal((await node.http('DELETE', `/delayed/${all.items[0].msgid as string}`)).status, 404, 'gone already')
  t.same((await listed()).items.map((i) => i.topic), ['l/500'])
  t.equal((await node.node.commands.run(['delayed', 'list'])).text.split('\n').length, 1)

  t.equal(await counted() - before, 3, 'messages/delayed counts what was taken in')
  t.match(await node.node.observability.prometheus.text(), /^broker_messages_delayed_total\{node="[^"]+"\} [1-9]/m, 'also in Prometheus')
})

t.test('unload through the API: $delayed/ is an ordinary topic; load again: what was stored is still published', async (t) => {
  const sub = await node.mqtt({ clientId: 'sub-unload', protocolVersion: 5 })
  const got = record(sub)
  await sub.subscribeAsync(['u/#', '$delayed/#'], { qos: 1 })
  const pub = await node.mqtt({ clientId: 'pub-unload', protocolVersion: 5 })
  t.equal(await ackCode(pub, '$delayed/2/u/kept', 'kept'), 0)
  t.equal((await node.http('PUT', `/nodes/${name}/plugins/${PLUGIN}/unload`)).status, 200)
  t.equal(node.node.plugins.registrations(PLUGIN), 0, 'everything released')
  t.equal((await node.http('GET', '/delayed')).status, 404, 'the routes went with it')
  t.equal(node.node.commands.get('delayed'), undefined)
  t.equal(await ackCode(pub, '$delayed/1/u/literal', 'literal'), 0)
  t.match(await got.on('$delayed/1/u/literal'), [{ payload: 'literal' }], 'delivered at once under its own topic, as EMQ X does')
  t.equal((await node.http('PUT', `/nodes/${name}/plugins/${PLUGIN}/load`)).status, 200)
  t.match(await got.on('u/kept'), [{ payload: 'kept' }], 'the message stored before the unload is published by the new load')
  t.same(got.seen('u/literal'), [])
})

t.test('a bad setting is refused with file and line', async (t) => {
  await t.rejects(startPluginNode({ plugin: PLUGIN, settings: { 'delayed.max_delayed_messages': '-5' } }),
    /broker_delayed_publish\.conf:1: delayed\.max_delayed_messages: -5 is out of range 0\.\./)
  await t.rejects(startPluginNode({ plugin: PLUGIN, settings: { 'delayed.max_delayed_messages': 'lots' } }),
    /broker_delayed_publish\.conf:1: delayed\.max_delayed_messages: \S+ is not (a number|an integer)/)
  t.equal((await node.http('PUT', `/nodes/${name}/plugin_configs/${PLUGIN}`, { 'delayed.max_delayed_messages': 'lots' })).status, 400, 'refused at run time too')
})

t.test('a restart keeps the delayed messages: one that fell due while the node was down is published at start, the others when due', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'delayed-restart-'))
  t.teardown(async () => { await rm(dataDir, { recursive: true, force: true }) })
  const first = await startPluginNode({ plugin: PLUGIN, withApi: true, dataDir })
  // a persistent session: what is published while it is away is kept for it
  const session = { clientId: 'keeper', protocolVersion: 5 as const, clean: false, properties: { sessionExpiryInterval: 3600 } }
  const away = await first.mqtt(session)
  await away.subscribeAsync('r/#', { qos: 1 })
  await away.endAsync()
  const pub = await first.mqtt({ clientId: 'pub-restart', protocolVersion: 5 })
  t.equal(await ackCode(pub, '$delayed/1/r/while-down', 'down', { qos: 1, properties: { userProperties: { kept: 'yes' } } }), 0)
  t.equal(await ackCode(pub, '$delayed/4/r/after', 'after'), 0)
  const before = ((await first.http('GET', '/delayed')).body as Listed).items
  t.same(before.map((i) => i.topic), ['r/while-down', 'r/after'])
  await first.stop()

  // a record that does not decode, stored under a valid id while the node is down
  const junkId = newId(Date.now() + 500)
  await withPluginStore(dataDir, PLUGIN, async (store) => { await store.put(junkId, '{"v":1,"topic":"r/#","qos":7}') })

  const dueWhileDown = dueOf(before[0].msgid as string)
  while (Date.now() <= dueWhileDown) await new Promise((resolve) => setTimeout(resolve, dueWhileDown - Date.now() + 50))
  const second = await startPluginNode({ plugin: PLUGIN, withApi: true, dataDir })
  t.teardown(second.stop)
  const back = await second.mqtt(session)
  const got = record(back)
  const [down] = await got.on('r/while-down')
  t.match(down, { payload: 'down', qos: 1, properties: { userProperties: { kept: 'yes' } } }, 'published at start, kept for the session')
  const listed = ((await second.http('GET', '/delayed')).body as Listed)
  t.same(listed.items.map((i) => i.topic), ['r/after'], 'the malformed record is not listed')
  const [after] = await got.on('r/after')
  t.ok(after.at >= dueOf(before[1].msgid as string), 'the other one when it falls due, not before')
  t.same(await second.node.commands.run(['delayed', 'delete', junkId]), { text: 'ok', data: { deleted: junkId } }, 'an operator can delete a malformed record')
  t.equal(got.arrivals.length, 2, 'each once')
})

t.test('a mounted publisher: the message goes out under its mountpoint', async (t) => {
  const mounted = await startPluginNode({ plugin: PLUGIN, withApi: true, node: { 'zone.external.mountpoint': 'tenant/' } })
  t.teardown(mounted.stop)
  const sub = await mounted.mqtt({ clientId: 'm-sub', protocolVersion: 5 })
  const got = record(sub)
  await sub.subscribeAsync('x/#', { qos: 1 })
  const pub = await mounted.mqtt({ clientId: 'm-pub', protocolVersion: 5 })
  t.equal(await ackCode(pub, '$delayed/1/x/y', 'mounted'), 0)
  t.match(((await mounted.http('GET', '/delayed')).body as Listed).items, [{ topic: 'tenant/x/y' }], 'stored under the mountpoint')
  t.match(await got.on('x/y'), [{ payload: 'mounted' }], 'a client of the same mountpoint gets it as x/y')
})
