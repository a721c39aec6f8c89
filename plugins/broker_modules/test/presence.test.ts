// The presence module in a real node with the management API: the notices
// for MQTT 3.1.1 and 5 clients (exact payloads), the live settings (format,
// QoS, off and on) without a reload, unload and load through the API
// (notices stop, then come back), and a broken conf line refused with its
// file:line when the plugin loads.
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { startPluginNode, type MqttClient } from '../../../lib/plugin-kit/testing.js'
import { noMessageWithin, type Received } from '../../../test/helpers/mqtt.js'

const harness = await startPluginNode({ plugin: 'broker_modules', withApi: true })
t.teardown(harness.stop)
const node = harness.node
const PREFIX = `$SYS/brokers/${node.name}/clients/`
const QUIET_MS = 800

const watcher = await harness.mqtt({ clientId: 'presence-watcher', protocolVersion: 5 })
// only the clients of this file's tests: the watcher's own notice may still be on its way
await watcher.subscribeAsync(`${PREFIX}+/#`, { qos: 2 })
/** The next `count` notices about other clients than the watcher, once `act` ran. */
const nextNotices = async (count: number, act: () => Promise<void>): Promise<Received[]> => {
  const got = new Promise<Received[]>((resolve, reject) => {
    const seen: Received[] = []
    const timer = setTimeout(() => { watcher.off('message', onMessage); reject(new Error(`${seen.length}/${count} notices: ${JSON.stringify(seen)}`)) }, 10_000)
    function onMessage (topic: string, payload: Buffer, packet: { qos: number, retain: boolean }): void {
      if (topic.includes('/presence-watcher/')) return
      seen.push({ topic, payload: payload.toString(), qos: packet.qos, retain: packet.retain })
      if (seen.length < count) return
      clearTimeout(timer)
      watcher.off('message', onMessage)
      resolve(seen)
    }
    watcher.on('message', onMessage)
  })
  await act()
  return await got
}
const json = (m: Received): Record<string, unknown> => JSON.parse(m.payload) as Record<string, unknown>
const settings = async (values: Record<string, string>): Promise<void> => {
  const { status, body } = await harness.http('PUT', `/nodes/${node.name}/plugin_configs/broker_modules`, values)
  t.equal(status, 200, `PUT plugin_configs ${JSON.stringify(values)}: ${JSON.stringify(body)}`)
}

t.test('MQTT 3.1.1: connected (full payload) and disconnected after DISCONNECT', async (t) => {
  let alice: MqttClient | undefined
  const before = Date.now()
  const [up] = await nextNotices(1, async () => { alice = await harness.mqtt({ clientId: 'alice', username: 'al', clean: false, keepalive: 42, protocolVersion: 4 }) })
  t.equal(up.topic, `${PREFIX}alice/connected`)
  t.equal(up.qos, 1, 'QoS 1 by default')
  t.equal(up.retain, false)
  const payload = json(up)
  t.same(Object.keys(payload).sort(), ['clean_start', 'clientid', 'connack', 'ipaddress', 'keepalive', 'proto_name', 'proto_ver', 'ts', 'username'])
  t.match(payload, { clientid: 'alice', username: 'al', ipaddress: '127.0.0.1', clean_start: false, proto_ver: 4, proto_name: 'MQTT', keepalive: 42, connack: 0 })
  t.ok((payload.ts as number) >= before && (payload.ts as number) <= Date.now(), 'ts in milliseconds')
  const [down] = await nextNotices(1, async () => { await alice!.endAsync() })
  t.equal(down.topic, `${PREFIX}alice/disconnected`)
  t.same(Object.keys(json(down)).sort(), ['clientid', 'reason', 'ts', 'username'])
  t.match(json(down), { clientid: 'alice', username: 'al', reason: 'normal' })
})

t.test('MQTT 3.1 (MQIsdp) and MQTT 5: the protocol name and level; a socket closed without DISCONNECT', async (t) => {
  const [old] = await nextNotices(2, async () => {
    const c = await harness.mqtt({ clientId: 'old', protocolId: 'MQIsdp', protocolVersion: 3 })
    await c.endAsync()
  })
  t.match(json(old), { clientid: 'old', proto_ver: 3, proto_name: 'MQIsdp' })
  const [up, down] = await nextNotices(2, async () => {
    const bob = await harness.mqtt({ clientId: 'bob', protocolVersion: 5, keepalive: 0 })
    bob.stream.destroy()
  })
  t.match(json(up), { clientid: 'bob', username: 'undefined', proto_ver: 5, proto_name: 'MQTT', clean_start: true, keepalive: 0 }, 'no user name: the string "undefined"')
  t.match(json(down), { clientid: 'bob', username: 'undefined', reason: 'closed' })
})

t.test('live settings: short format, QoS 0, off and on again, all without a reload', async (t) => {
  const registrations = node.plugins.registrations('broker_modules')
  await settings({ 'module.presence.format': 'short', 'module.presence.qos': '0' })
  const [up] = await nextNotices(2, async () => {
    const carol = await harness.mqtt({ clientId: 'carol', protocolVersion: 5, clean: false, properties: { sessionExpiryInterval: 60 } })
    await carol.endAsync()
  })
  t.same(Object.keys(json(up)).sort(), ['clientid', 'connack', 'ipaddress', 'session', 'ts', 'username', 'version'], 'the short variant')
  t.match(json(up), { clientid: 'carol', session: true, version: 5, connack: 0 })
  t.equal(up.qos, 0, 'module.presence.qos = 0')

  await settings({ 'module.presence': 'off' })
  const quiet = noMessageWithin(watcher, QUIET_MS)
  const dave = await harness.mqtt({ clientId: 'dave' })
  await dave.endAsync()
  t.ok(await quiet, 'module.presence = off: no notices')

  await settings({ 'module.presence': 'on', 'module.presence.format': 'full', 'module.presence.qos': '1' })
  const [back] = await nextNotices(2, async () => {
    const erin = await harness.mqtt({ clientId: 'erin' })
    await erin.endAsync()
  })
  t.match(json(back), { clientid: 'erin', proto_name: 'MQTT' })
  t.equal(back.qos, 1)
  t.equal(node.plugins.registrations('broker_modules'), registrations, 'the same load: applied live')
})

t.test('unloaded through the API the notices stop; loaded again they come back', async (t) => {
  t.equal((await harness.http('PUT', `/nodes/${node.name}/plugins/broker_modules/unload`)).status, 200)
  t.equal(node.plugins.registrations('broker_modules'), 0, 'nothing of the load is left')
  const quiet = noMessageWithin(watcher, QUIET_MS)
  const frank = await harness.mqtt({ clientId: 'frank' })
  await frank.endAsync()
  t.ok(await quiet, 'unloaded: no notices')

  t.equal((await harness.http('PUT', `/nodes/${node.name}/plugins/broker_modules/load`)).status, 200)
  const [up, down] = await nextNotices(2, async () => {
    const gina = await harness.mqtt({ clientId: 'gina' })
    await gina.endAsync()
  })
  t.equal(up.topic, `${PREFIX}gina/connected`)
  t.equal(down.topic, `${PREFIX}gina/disconnected`)
  const listed = (await harness.http('GET', `/nodes/${node.name}/plugins/`)).body as Array<{ name: string, active: boolean, description: string }>
  t.match(listed.find((p) => p.name === 'broker_modules'), { active: true, description: /presence/ }, 'listed with its description')
})

t.test('a broken line in the conf file: the load is refused with its file:line, the running plugin untouched by a bad API change', async (t) => {
  const etc = join(harness.dataDir, 'etc', 'broker_modules.conf')
  await writeFile(etc, 'module.rewrite = on\nmodule.rewrite.rule.1 = x/# ^x/(.+$ y/$1\n')
  const reload = await node.commands.run(['plugins', 'reload', 'broker_modules']).then(() => 'reloaded', (err: Error) => err.message)
  t.match(reload, `${etc}:2: module.rewrite.rule.1`, 'broker_ctl plugins reload: the file and line')
  t.match(reload, 'bad regex')
  t.ok(node.plugins.isActive('broker_modules'), 'a failed reload leaves the running load')
  await writeFile(etc, '')

  const refused = await harness.http('PUT', `/nodes/${node.name}/plugin_configs/broker_modules`, { 'module.subscription.1.topic': 'a/#/b' })
  t.equal(refused.status, 400)
  t.match(JSON.stringify(refused.body), 'module.subscription.1.topic')
  const [up] = await nextNotices(2, async () => {
    const hank = await harness.mqtt({ clientId: 'hank' })
    await hank.endAsync()
  })
  t.equal(up.topic, `${PREFIX}hank/connected`, 'still publishing')
})

t.test('a node started with a broken rule does not load the plugin and says where', async (t) => {
  await t.rejects(startPluginNode({ plugin: 'broker_modules', settings: { 'module.rewrite.rule.7': 'x/# ^x/(.+)$' } }), /broker_modules\.conf:1: module\.rewrite\.rule\.7: .*expected "<topic filter> <regex> <dest>", got 2 fields/)
})
