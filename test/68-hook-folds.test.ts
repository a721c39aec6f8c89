// The fold hooks and the hook points added for the message plugins (issue 17):
// `message.publish` changes or stops a message before the ACL (which checks
// the topic it made), with the MQTT 5 reason code of the stop in the PUBACK;
// `client.subscribe` / `client.unsubscribe` change or refuse filters; the
// node's own publishes go through the fold too; `client.connect`,
// `client.connack`, `session.terminated` are told; plugin counters show with
// the node's metrics. Real MQTT.js clients against a node with the fixture
// plugin of test/fixtures/hook-plugins.
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { startPluginNode, type MqttClient, type PluginNode } from '../lib/plugin-kit/testing.js'
import type { FoldCalls } from './fixtures/hook-plugins/broker_fixture_folds/index.js'
import { nextMessages, noMessageWithin } from './helpers/mqtt.js'

const PLUGIN = 'broker_fixture_folds'
const FIXTURES = join(import.meta.dirname, 'fixtures', 'hook-plugins')

async function until (ready: () => boolean, timeoutMs = 10_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; !ready(); await new Promise((resolve) => setTimeout(resolve, 20))) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
  }
}

async function start (t: Test): Promise<PluginNode> {
  const dir = await mkdtemp(join(tmpdir(), 'folds-acl-'))
  const aclFile = join(dir, 'acl.conf')
  await writeFile(aclFile, '{deny, all, publish, ["secret/#", "forbidden/#"]}.\n{allow, all}.\n')
  const node = await startPluginNode({ plugin: PLUGIN, pluginDirs: [FIXTURES], withApi: true, node: { 'mqtt.acl_file': aclFile } })
  t.teardown(async () => {
    await node.stop()
    await rm(dir, { recursive: true, force: true })
  })
  return node
}

/** The PUBACK of a QoS 1 publish from an MQTT 5 client: its reason code. */
async function pubackCode (client: MqttClient, topic: string, payload = 'x'): Promise<number> {
  return await new Promise((resolve, reject) => {
    client.publish(topic, payload, { qos: 1 }, (err, packet) => {
      // MQTT.js fails a publish acknowledged with 0x80 and up, with an error carrying the code
      const failure = err as (Error & { code?: number }) | null | undefined
      if (failure != null && failure.code === undefined) return reject(failure)
      resolve(failure?.code ?? (packet as { reasonCode?: number } | undefined)?.reasonCode ?? 0)
    })
  })
}

/** The SUBACK codes of one SUBSCRIBE at QoS 1 (MQTT.js fails a subscribe with any code of 0x80 and up). */
async function subackCodes (client: MqttClient, filters: string[]): Promise<number[]> {
  return await new Promise((resolve) => {
    client.once('packetreceive', function onPacket (packet) {
      if (packet.cmd === 'suback') resolve(packet.granted as number[])
      else client.once('packetreceive', onPacket)
    })
    client.subscribe(filters, { qos: 1 }, () => {})
  })
}

t.test('message.publish: rewrite, payload change, stops with their reason codes, ACL on the folded topic', async (t) => {
  const node = await start(t)
  const sub = await node.mqtt({ clientId: 'sub', protocolVersion: 5 })
  await sub.subscribeAsync(['to/#', 'upper/#', 'take/#', 'refuse/#', 'secret/#', 'throw/#', 'from/#', 'wild/#'], { qos: 1 })
  const pub = await node.mqtt({ clientId: 'pub', protocolVersion: 5 })
  const v3 = await node.mqtt({ clientId: 'pub3', protocolVersion: 4 })

  let next = nextMessages(sub, 1)
  t.equal(await pubackCode(pub, 'from/a/b', 'moved'), 0, 'a rewritten message is acknowledged as usual')
  t.match(await next, [{ topic: 'to/a/b', payload: 'moved' }], 'delivered under the topic the fold made')

  next = nextMessages(sub, 1)
  await pub.publishAsync('upper/x', 'shout', { qos: 1 })
  t.match(await next, [{ topic: 'upper/x', payload: 'SHOUT' }], 'the payload the fold made')

  t.equal(await pubackCode(pub, 'take/x'), 0, 'a message a plugin takes in: PUBACK success')
  t.equal(await pubackCode(pub, 'refuse/x'), 0x97, 'a refusal: its reason code')
  t.ok(await noMessageWithin(sub, 500), 'neither is routed')

  t.equal(await pubackCode(pub, 'ask/x'), 0x87, 'authorize() answers with the publisher\'s ACL: secret/# is denied')
  t.equal(await pubackCode(pub, 'forbidden/x'), 0x87, 'a plain publish to a denied topic is refused as before')

  next = nextMessages(sub, 1)
  t.equal(await pubackCode(pub, 'wild/x', 'w'), 0, 'a fold answering a wildcard topic is not applied…')
  t.match(await next, [{ topic: 'wild/x', payload: 'w' }], '…the message goes on unchanged')
  t.equal(await pubackCode(pub, 'sys/x', 's'), 0, 'a fold cannot move a message into $SYS')
  next = nextMessages(sub, 1)
  t.equal(await pubackCode(pub, 'throw/x', 't'), 0, 'a handler that throws is skipped…')
  t.match(await next, [{ topic: 'throw/x', payload: 't' }], '…and the message goes on')

  await v3.publishAsync('refuse/y', 'r', { qos: 1 })
  t.pass('an MQTT 3.1.1 publisher stopped by a plugin gets its usual PUBACK')
  next = nextMessages(sub, 1)
  await v3.publishAsync('from/v3', 'three', { qos: 1 })
  t.match(await next, [{ topic: 'to/v3', payload: 'three' }], 'and is folded the same way')
  t.ok(v3.connected && pub.connected, 'no publisher was disconnected')

  const { body } = await node.http('GET', `/nodes/${node.node.name}/metrics`) as { body: Record<string, number> }
  t.ok(body['messages/dropped'] >= 3, 'the refusals (0x97, 0x87 twice, v3 0x97) count as dropped')
  t.same((node.node.plugins.api(PLUGIN) as FoldCalls).accepted, [
    ['to/a/b', 'moved', 'pub'], ['upper/x', 'SHOUT', 'pub'], ['wild/x', 'w', 'pub'], ['sys/x', 's', 'pub'], ['throw/x', 't', 'pub'], ['to/v3', 'three', 'pub3']
  ], 'message.accepted: each message let in, as the folds made it, with its publisher; none stopped or refused by the ACL')
})

t.test('the node\'s own publishes (API) go through message.publish', async (t) => {
  const node = await start(t)
  const sub = await node.mqtt({ clientId: 'sub', protocolVersion: 5 })
  await sub.subscribeAsync('to/#', { qos: 1 })
  const publish = async (topic: string): Promise<number> => (await node.http('POST', '/mqtt/publish', { topic, payload: 'api', qos: 1, client_id: 'api' })).status
  const next = nextMessages(sub, 1)
  t.equal(await publish('from/api'), 200)
  t.match(await next, [{ topic: 'to/api', payload: 'api' }], 'rewritten')
  t.equal(await publish('take/api'), 200, 'a message a plugin takes in is published as far as the API is concerned')
  const refused = await node.http('POST', '/mqtt/publish', { topic: 'refuse/api', payload: 'api' })
  t.match(refused, { status: 400, body: { message: /fixture quota.*0x97/ } }, 'a refusal is an error that says why')
  t.ok(await noMessageWithin(sub, 300))
  t.same((node.node.plugins.api(PLUGIN) as FoldCalls).accepted, [['to/api', 'api', undefined]], 'message.accepted: the one let in, with no publisher')
})

t.test('client.subscribe and client.unsubscribe change or refuse filters', async (t) => {
  const node = await start(t)
  const sub = await node.mqtt({ clientId: 'sub', protocolVersion: 5 })
  t.same(await subackCodes(sub, ['alias/#', 'nope/#', 'broken/#']), [1, 0x9e, 1], 'SUBACK: granted, the plugin\'s code, granted unchanged (a broken filter is not applied)')
  const subs = await node.http('GET', '/subscriptions/sub')
  t.match((subs.body as Array<{ topic: string }>).map((s) => s.topic).sort(), ['broken/#', 'to/#'], 'the rewritten filter is what the session holds')
  const v3 = await node.mqtt({ clientId: 'sub3', protocolVersion: 4 })
  t.same(await subackCodes(v3, ['nope/#']), [128], 'MQTT 3.1.1: 0x80')

  const pub = await node.mqtt({ clientId: 'pub' })
  const next = nextMessages(sub, 1)
  await pub.publishAsync('to/1', 'one', { qos: 1 })
  t.match(await next, [{ topic: 'to/1' }])
  await sub.unsubscribeAsync('alias/#')
  const calls = node.node.plugins.api(PLUGIN) as FoldCalls
  t.same(calls.unsubscribe, ['alias/#'])
  await pub.publishAsync('to/2', 'two', { qos: 1 })
  t.ok(await noMessageWithin(sub, 300), 'unsubscribing alias/# removed to/#')
})

t.test('client.connect, client.connack, session.terminated; a plugin counter in the metrics until unload', async (t) => {
  const node = await start(t)
  const calls = node.node.plugins.api(PLUGIN) as FoldCalls
  const client = await node.mqtt({ clientId: 'c1', username: 'u1', protocolVersion: 5, keepalive: 30, clean: true })
  t.match(calls.connect, [[{ clientId: 'c1', username: 'u1', ipAddress: '127.0.0.1', protocol: 'mqtt:tcp', protoVer: 5, cleanStart: true }]])
  t.same(calls.connack, [['c1', 'success']])
  t.equal((await node.http('POST', '/banned', { who: 'bad', as: 'client_id', reason: 'test' })).status, 200)
  await t.rejects(node.mqtt({ clientId: 'bad', protocolVersion: 5 }), 'a banned client is refused')
  t.same(calls.connack, [['c1', 'success'], ['bad', 'banned']], 'client.connack says why')
  await client.endAsync()
  await until(() => calls.terminated.length > 0)
  t.same(calls.terminated, [['c1', 'normal']], 'a clean session ends with its client')

  const persistent = await node.mqtt({ clientId: 'p1', clean: false, protocolVersion: 4 })
  await persistent.endAsync()
  await new Promise((resolve) => setTimeout(resolve, 200))
  t.same(calls.terminated, [['c1', 'normal']], 'a persistent session outlives its connection')

  const metrics = async (): Promise<Record<string, number>> => (await node.http('GET', `/nodes/${node.node.name}/metrics`)).body as Record<string, number>
  const pub = await node.mqtt({ clientId: 'pub' })
  await pub.publishAsync('plain/x', 'x', { qos: 1 })
  t.ok((await metrics())['fixture/folded'] >= 1, 'the plugin counter is listed with the node metrics')
  t.match(await node.node.observability.prometheus.text(), /^broker_fixture_folded_total\{node="[^"]+"\} [1-9]/m, 'and exposed to Prometheus')
  await node.node.plugins.unload(PLUGIN)
  t.notOk('fixture/folded' in await metrics(), 'gone when the plugin unloads')
  t.notMatch(await node.node.observability.prometheus.text(), /broker_fixture_folded_total/)
  await node.node.plugins.load(PLUGIN)
  t.equal((await metrics())['fixture/folded'], 0, 'a new load counts from zero')
})
