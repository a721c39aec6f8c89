// The rewrite module in a real node with MQTT 3.1.1 and 5 clients: publish
// topics rewritten with their groups, the ACL applied to the rewritten topic
// (publish and subscribe), subscribe and unsubscribe rewritten alike (shared
// subscriptions too), one-sided rules, results that are no valid topic left
// alone, the trace files showing both topics, the switch live, and unload.
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { startPluginNode, tempDir, type MqttClient } from '../../../lib/plugin-kit/testing.js'

const dir = await tempDir()
const acl = join(dir, 'acl.conf')
// `limited` may publish to z/#, not to x/# nor closed/#, and may not subscribe to closed/#
await writeFile(acl, [
  '{allow, {user, "limited"}, publish, ["z/#"]}.',
  '{deny, {user, "limited"}, publish, ["x/#", "closed/#"]}.',
  '{deny, {user, "limited"}, subscribe, ["closed/#"]}.',
  '{allow, all}.'
].join('\n') + '\n')
const harness = await startPluginNode({
  plugin: 'broker_modules',
  settings: {
    'module.presence': 'off',
    'module.rewrite': 'on',
    'module.rewrite.rule.1': 'x/# ^x/y/(.+)$ z/y/$1',
    'module.rewrite.rule.2': 'y/+/z/# ^y/(.+)/z/(.+)$ y/z/$2',
    'module.rewrite.rule.3': 'open/# ^open/(.+)$ closed/$1',
    'module.rewrite.pub.rule.4': 'dev/+/up ^dev/([^/]+)/up$ up/$1',
    'module.rewrite.sub.rule.5': 'mine/# ^mine/(.+)$ home/$1',
    'module.rewrite.rule.6': 'bad/# ^bad/(.+)$ bad/+/$1',
    'module.rewrite.sub.rule.7': 'w/# ^w/(.+)$ w/$1/end'
  },
  node: { 'mqtt.acl_file': acl, 'mqtt.cache_acl': 'false' },
  withApi: true
})
t.teardown(harness.stop)
const node = harness.node

/** Everything a client receives, as `topic payload`; `until(n)` waits (10 s at most) for n of them. */
function inbox (client: MqttClient): { seen: string[], until: (count: number) => Promise<string[]> } {
  const seen: string[] = []
  client.on('message', (topic, payload) => seen.push(`${topic} ${payload.toString()}`))
  return {
    seen,
    until: async (count) => {
      const deadline = Date.now() + 10_000
      while (seen.length < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
      return seen
    }
  }
}

/** A subscriber on `filters` (MQTT 5), with its inbox. */
async function subscriber (clientId: string, filters: string[]): Promise<ReturnType<typeof inbox>> {
  const client = await harness.mqtt({ clientId, protocolVersion: 5 })
  await client.subscribeAsync(filters, { qos: 1 })
  return inbox(client)
}

/** The subscriber's messages once `marker` (published last, on a topic it has) came. */
async function upTo (box: ReturnType<typeof inbox>, marker: string): Promise<string[]> {
  const deadline = Date.now() + 10_000
  while (!box.seen.some((m) => m.endsWith(` ${marker}`)) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
  return box.seen.filter((m) => !m.endsWith(` ${marker}`))
}

for (const version of [4, 5] as const) {
  t.test(`MQTT ${version === 4 ? '3.1.1' : '5'} publisher: topics rewritten with their groups, the ACL checks the rewritten topic`, async (t) => {
    const watch = await subscriber(`watch-${version}`, ['z/#', 'y/#', 'up/#', 'dev/#', 'x/#', 'closed/#', 'end'])
    const pub = await harness.mqtt({ clientId: `limited-${version}`, username: 'limited', protocolVersion: version })
    const free = await harness.mqtt({ clientId: `free-${version}`, protocolVersion: version })
    await pub.publishAsync('x/y/1/2', 'a', { qos: 1 })
    await free.publishAsync('y/a/z/b', 'b', { qos: 1 })
    await free.publishAsync('dev/42/up', 'c', { qos: 1 })
    await free.publishAsync('x/q', 'd', { qos: 1 })
    // MQTT.js rejects a publish whose MQTT 5 PUBACK carries a refusal, with its reason code
    const refused = await pub.publishAsync('open/door', 'e', { qos: 1 }).then(() => 0, (err: { code?: number }) => err.code)
    await free.publishAsync('end', 'marker', { qos: 1 })
    t.same((await upTo(watch, 'marker')).sort(), ['up/42 c', 'x/q d', 'y/z/b b', 'z/y/1/2 a'],
      'x/y/1/2 → z/y/1/2 (allowed to limited, though x/# is not); y/a/z/b → y/z/b; dev/42/up → up/42; x/q unchanged (rule 1 matched, its regex not); open/door → closed/door refused')
    t.equal(refused, version === 5 ? 0x87 : 0, version === 5 ? 'MQTT 5: PUBACK 0x87 for the rewritten topic the ACL refuses' : 'MQTT 3.1.1: acknowledged (and dropped)')
  })
}

t.test('subscribe and unsubscribe are rewritten alike; the ACL checks the rewritten filter', async (t) => {
  for (const version of [4, 5] as const) {
    const client = await harness.mqtt({ clientId: `sub-${version}`, protocolVersion: version })
    const box = inbox(client)
    const granted = await client.subscribeAsync({ 'x/y/#': { qos: 1 }, '$share/g/x/y/s/#': { qos: 1 }, 'mine/a': { qos: 1 }, 'w/#': { qos: 0 }, 'w/a': { qos: 0 }, 'bad/q': { qos: 0 }, [`m-${version}`]: { qos: 1 } })
    t.same(granted.map((g) => g.qos), [1, 1, 1, 0, 0, 0, 1], `v${version}: all granted`)
    t.same(node.service.clientSubscriptions(`sub-${version}`).map((s) => s.topic).sort(),
      ['$share/g/z/y/s/#', 'bad/+/q', 'home/a', `m-${version}`, 'w/#', 'w/a/end', 'z/y/#'].sort(),
      `v${version}: x/y/# → z/y/#, the shared filter behind $share/g/, mine/a → home/a (subscribe-only rule), w/# left (w/#/end is no filter)`)
    const free = await harness.mqtt({ clientId: `feeder-${version}` })
    await free.publishAsync('z/y/q', 'direct', { qos: 1 })
    await free.publishAsync('mine/a', 'publish side not rewritten', { qos: 1 })
    await free.publishAsync('home/a', 'home', { qos: 1 })
    await free.publishAsync(`m-${version}`, 'marker', { qos: 1 })
    t.same((await upTo(box, 'marker')).sort(), ['home/a home', 'z/y/q direct'], `v${version}: delivered under the rewritten filters`)

    await client.unsubscribeAsync(['x/y/#', 'mine/a'])
    t.same(node.service.clientSubscriptions(`sub-${version}`).map((s) => s.topic).sort(), ['$share/g/z/y/s/#', 'bad/+/q', `m-${version}`, 'w/#', 'w/a/end'].sort(),
      `v${version}: UNSUBSCRIBE x/y/# and mine/a removed z/y/# and home/a`)
    box.seen.length = 0
    await free.publishAsync('z/y/q', 'after', { qos: 1 })
    await free.publishAsync(`m-${version}`, 'marker2', { qos: 1 })
    t.same(await upTo(box, 'marker2'), [], `v${version}: nothing after the unsubscribe`)
  }
  for (const [version, refused] of [[4, 0x80], [5, 0x87]] as const) {
    const limited = await harness.mqtt({ clientId: `limited-sub-${version}`, username: 'limited', protocolVersion: version })
    // MQTT.js rejects a SUBACK with a refusal in it, the packet attached
    const granted = await limited.subscribeAsync({ 'open/#': { qos: 1 }, 'open2/#': { qos: 1 } })
      .then((grants) => grants.map((g) => g.qos), (err: { packet?: { granted?: number[] } }) => err.packet?.granted)
    t.same(granted, [refused, 1], `v${version}: open/# → closed/# refused by the ACL (${refused.toString(16)})`)
  }
})

t.test('a rewrite that makes no valid topic is not applied: the message goes on under its own topic', async (t) => {
  const watch = await subscriber('watch-bad', ['+/a', 'bad/#', 'end-bad'])
  const free = await harness.mqtt({ clientId: 'bad-publisher' })
  await free.publishAsync('bad/a', 'kept', { qos: 1 })
  await free.publishAsync('end-bad', 'marker', { qos: 1 })
  t.same(await upTo(watch, 'marker'), ['bad/a kept'], 'bad/+/a is no topic name: published as bad/a')
})

t.test('the trace files show the rewritten topic and the original', async (t) => {
  const traces = await tempDir()
  const topicLog = join(traces, 'topic.log')
  const clientLog = join(traces, 'client.log')
  const publisher = await harness.mqtt({ clientId: 'traced', protocolVersion: 5 })
  await node.commands.run(['trace', 'topic', 'z/y/#', topicLog])
  await node.commands.run(['trace', 'client', 'traced', clientLog])
  const watch = await subscriber('watch-trace', ['z/#', 'end-trace'])
  await publisher.publishAsync('x/y/traced', 'p', { qos: 1 })
  await publisher.publishAsync('end-trace', 'marker', { qos: 1 })
  await upTo(watch, 'marker')
  await node.commands.run(['trace', 'topic', 'z/y/#', 'off'])
  await node.commands.run(['trace', 'client', 'traced', 'off'])
  const topicLines = (await readFile(topicLog, 'utf8')).trim().split('\n')
  t.equal(topicLines.length, 1, 'one message to z/y/#')
  t.match(topicLines[0], /z\/y\/# PUBLISH from traced PUBLISH\(Q1, R0, D0, Topic=z\/y\/traced, .*\) rewritten from x\/y\/traced$/)
  const clientText = await readFile(clientLog, 'utf8')
  t.match(clientText, /traced@127\.0\.0\.1:\d+ RECV PUBLISH\(Q1, R0, D0, Topic=x\/y\/traced, /, 'the client\'s PUBLISH as it sent it')
  t.match(clientText, /traced@127\.0\.0\.1:\d+ REWRITE PUBLISH x\/y\/traced -> z\/y\/traced\n/, 'then the rewrite')
  t.notMatch(clientText, /REWRITE PUBLISH end-trace/, 'no line for a message no rule changed')

  await node.commands.run(['trace', 'topic', 'x/y/#', topicLog + '.2'])
  await publisher.publishAsync('x/y/again', 'p', { qos: 1 })
  await publisher.publishAsync('end-trace', 'marker', { qos: 1 })
  await upTo(watch, 'marker')
  await node.commands.run(['trace', 'topic', 'x/y/#', 'off'])
  t.match(await readFile(topicLog + '.2', 'utf8'), /x\/y\/# PUBLISH from traced PUBLISH\(.*Topic=z\/y\/again, .*\) rewritten from x\/y\/again\n/, 'a trace on the original topic catches it too')
})

t.test('the API publish is rewritten too', async (t) => {
  const watch = await subscriber('watch-api', ['z/#', 'end-api'])
  t.equal((await harness.http('POST', '/mqtt/publish', { topic: 'x/y/api', payload: 'from the API', qos: 1, client_id: 'api' })).status, 200)
  await (await harness.mqtt({ clientId: 'api-marker' })).publishAsync('end-api', 'marker', { qos: 1 })
  t.same(await upTo(watch, 'marker'), ['z/y/api from the API'])
})

t.test('module.rewrite off at run time: nothing rewritten, no reload; on again: rewritten', async (t) => {
  const registrations = node.plugins.registrations('broker_modules')
  await switchRewrite(t, 'off')
  const watch = await subscriber('watch-live', ['x/#', 'z/#', 'end-live'])
  const free = await harness.mqtt({ clientId: 'live-publisher' })
  await free.publishAsync('x/y/off', 'o', { qos: 1 })
  await switchRewrite(t, 'on')
  await free.publishAsync('x/y/on', 'o', { qos: 1 })
  await free.publishAsync('end-live', 'marker', { qos: 1 })
  t.same(await upTo(watch, 'marker'), ['x/y/off o', 'z/y/on o'])
  t.equal(node.plugins.registrations('broker_modules'), registrations)
})

t.test('unloaded, nothing is rewritten; loaded again, it is', async (t) => {
  const watch = await subscriber('watch-unload', ['x/#', 'z/#', 'end-unload'])
  const free = await harness.mqtt({ clientId: 'unload-publisher', protocolVersion: 5 })
  t.equal((await harness.http('PUT', `/nodes/${node.name}/plugins/broker_modules/unload`)).status, 200)
  t.same(node.hooks.owners('message.publish').filter((o) => o === 'broker_modules'), [], 'its fold is gone')
  await free.publishAsync('x/y/unloaded', 'u', { qos: 1 })
  t.equal((await harness.http('PUT', `/nodes/${node.name}/plugins/broker_modules/load`)).status, 200)
  await free.publishAsync('x/y/loaded', 'l', { qos: 1 })
  await free.publishAsync('end-unload', 'marker', { qos: 1 })
  t.same(await upTo(watch, 'marker'), ['x/y/unloaded u', 'z/y/loaded l'])
})

async function switchRewrite (t: Test, value: string): Promise<void> {
  t.equal((await harness.http('PUT', `/nodes/${node.name}/plugin_configs/broker_modules`, { 'module.rewrite': value })).status, 200)
}
