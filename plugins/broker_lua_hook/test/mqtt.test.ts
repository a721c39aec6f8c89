// broker_lua_hook in a real node: scripts written into the node's data
// folder, the plugin loaded and unloaded through the management API, and
// MQTT.js clients (3.1.1 and 5) seeing what the scripts do: a publish
// rewritten and one dropped, a filter dropped and one renamed, the
// connected/disconnected hooks (read back through a message a script
// rewrites), an erroring and an infinite-loop script skipped while traffic
// flows, the luahook command, the counters in the metrics.
import t from 'tap'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { startPluginNode, type MqttClient } from '../../../lib/plugin-kit/testing.js'

const PLUGIN = 'broker_lua_hook'
// generous: a loaded CI machine must not turn a normal call into a timeout
const TIMEOUT = '1s'
const harness = await startPluginNode({ plugin: PLUGIN, settings: { 'lua.hook.timeout': TIMEOUT }, withApi: true })
t.teardown(harness.stop)
const { node } = harness
const dir = join(harness.dataDir, 'script')
mkdirSync(dir, { recursive: true })
const write = (file: string, text: string): void => writeFileSync(join(dir, file), text)
const ctl = async (...args: string[]): Promise<{ text: string, data: unknown }> => await node.commands.run(['luahook', ...args])
const api = async (method: string, path: string): Promise<number> => (await harness.http(method, path)).status
const metrics = async (): Promise<Record<string, number>> => (await harness.http('GET', `/nodes/${node.name}/metrics`)).body as Record<string, number>

write('a-rewrite.lua', `
seen = {}
function on_client_connected(clientid, username, rc) seen[#seen + 1] = "connected:" .. clientid .. ":" .. rc end
function on_client_disconnected(clientid, username, reason) seen[#seen + 1] = "disconnected:" .. clientid .. ":" .. reason end
function on_message_publish(clientid, username, topic, payload, qos, retain)
  if topic:match("^drop/") then return false end
  local rest = topic:match("^in/(.*)$")
  if rest then return "out/" .. rest, "rewritten:" .. payload .. ":" .. clientid, qos, retain end
  if topic == "probe/seen" then return topic, table.concat(seen, ","), qos, retain end
end
function register_hook() return "on_client_connected", "on_client_disconnected", "on_message_publish" end`)
write('b-subscribe.lua', `
function on_client_subscribe(clientid, username, topic)
  if topic == "forbidden/#" then return false end
  if topic == "alias" then return "real/" .. clientid end
end
function register_hook() return "on_client_subscribe" end`)
write('c-error.lua', 'function on_message_publish() error("broken on purpose") end function register_hook() return "on_message_publish" end')
write('d-loop.lua', 'function on_message_publish(c, u, topic) if topic:match("^spin/") then while true do end end end function register_hook() return "on_message_publish" end')
write('e-off.lua.x', 'function on_message_publish() return false end function register_hook() return "on_message_publish" end')

/** The next message on `topic` within the deadline (others skipped). */
async function next (client: MqttClient, topic: string, ms = 10_000): Promise<string> {
  return await new Promise((resolve, reject) => {
    const timer = setTimeout(() => { client.off('message', on); reject(new Error(`no message on ${topic}`)) }, ms)
    function on (got: string, payload: Buffer): void {
      if (got !== topic) return
      clearTimeout(timer)
      client.off('message', on)
      resolve(payload.toString())
    }
    client.on('message', on)
  })
}

/** Publishes at QoS 1 and answers the PUBACK's reason code as it came on the wire (0 for MQTT 3.1.1, which has none). */
async function publish (client: MqttClient, topic: string, payload: string): Promise<number> {
  const code = new Promise<number>((resolve) => {
    client.on('packetreceive', function onPacket (packet) {
      if (packet.cmd !== 'puback') return
      client.off('packetreceive', onPacket)
      resolve(packet.reasonCode ?? 0)
    })
  })
  await client.publishAsync(topic, payload, { qos: 1 })
  return await code
}

/** The SUBACK codes of one SUBSCRIBE at QoS 1, from the wire (MQTT.js fails a subscribe with a code of 0x80 and up). */
async function subackCodes (client: MqttClient, filters: string[]): Promise<number[]> {
  return await new Promise((resolve) => {
    client.on('packetreceive', function onPacket (packet) {
      if (packet.cmd !== 'suback') return
      client.off('packetreceive', onPacket)
      resolve(packet.granted as number[])
    })
    client.subscribe(filters, { qos: 1 }, () => {})
  })
}

t.test('the plugin loads the scripts of data/script when it loads through the API', async (t) => {
  t.equal(await api('PUT', `/nodes/${node.name}/plugins/${PLUGIN}/unload`), 200)
  t.equal(node.commands.get('luahook'), undefined, 'the command went with the plugin')
  t.equal(await api('PUT', `/nodes/${node.name}/plugins/${PLUGIN}/load`), 200)
  const { data } = await ctl('list')
  t.match(data, [
    { name: 'a-rewrite', status: 'loaded', hooks: ['on_client_connected', 'on_client_disconnected', 'on_message_publish'] },
    { name: 'b-subscribe', status: 'loaded', hooks: ['on_client_subscribe'] },
    { name: 'c-error', status: 'loaded' },
    { name: 'd-loop', status: 'loaded' },
    { name: 'e-off', status: 'disabled' }
  ])
})

t.test('a publish rewritten and one dropped, with MQTT 3.1.1 and 5 clients', async (t) => {
  const sub = await harness.mqtt({ clientId: 'watcher', protocolVersion: 4 })
  await sub.subscribeAsync(['out/#', 'in/#', 'drop/#'], { qos: 1 })
  for (const protocolVersion of [4, 5] as const) {
    const pub = await harness.mqtt({ clientId: `pub-v${protocolVersion}`, protocolVersion })
    const got = next(sub, `out/v${protocolVersion}`)
    t.equal(await publish(pub, `in/v${protocolVersion}`, 'hello'), 0)
    t.equal(await got, `rewritten:hello:pub-v${protocolVersion}`, `MQTT ${protocolVersion}: topic and payload rewritten`)
    const dropped = next(sub, `drop/v${protocolVersion}`, 1500).then(() => 'delivered', () => 'not delivered')
    const code = await publish(pub, `drop/v${protocolVersion}`, 'x')
    t.equal(code, protocolVersion === 5 ? 0x10 : 0, 'a dropped message is acknowledged as one no subscriber took (EMQ X)')
    // the marker after it arrives in order, so the dropped one would have been seen before it
    const marker = next(sub, `out/after-v${protocolVersion}`)
    await publish(pub, `in/after-v${protocolVersion}`, 'm')
    await marker
    t.equal(await dropped, 'not delivered')
    await pub.endAsync()
  }
  t.ok((await metrics())['lua_hook/messages_dropped'] >= 2, 'counted in the metrics')
})

t.test('a subscribe filter dropped (SUBACK 0x80) and one renamed', async (t) => {
  for (const protocolVersion of [4, 5] as const) {
    const client = await harness.mqtt({ clientId: `sub-v${protocolVersion}`, protocolVersion })
    t.same(await subackCodes(client, ['forbidden/#', 'alias', 'plain']), [0x80, 1, 1], `MQTT ${protocolVersion}: SUBACK`)
    const pub = await harness.mqtt({ clientId: `p-sub-v${protocolVersion}` })
    const got = next(client, `real/sub-v${protocolVersion}`)
    await publish(pub, `real/sub-v${protocolVersion}`, 'via alias')
    t.equal(await got, 'via alias', 'the renamed filter was subscribed')
    const routes = node.service.routes()
    t.notOk(JSON.stringify(routes).includes('forbidden'), 'no route for the dropped filter')
    await client.endAsync()
    await pub.endAsync()
  }
})

t.test('connected and disconnected hooks ran (the script shows what it saw)', async (t) => {
  const c = await harness.mqtt({ clientId: 'visitor', protocolVersion: 5 })
  await c.endAsync()
  const probe = await harness.mqtt({ clientId: 'prober' })
  await probe.subscribeAsync('probe/seen')
  const got = next(probe, 'probe/seen')
  await publish(probe, 'probe/seen', '')
  const seen = (await got).split(',')
  t.ok(seen.includes('connected:visitor:0'), 'on_client_connected(clientid, username, 0)')
  t.ok(seen.includes('disconnected:visitor:normal'), 'on_client_disconnected(clientid, username, reason)')
})

t.test('an erroring script and an infinite loop are skipped while traffic flows', async (t) => {
  const sub = await harness.mqtt({ clientId: 'loop-watcher' })
  await sub.subscribeAsync(['spin/#', 'out/#'], { qos: 1 })
  const pub = await harness.mqtt({ clientId: 'spinner', protocolVersion: 5 })
  const spun = next(sub, 'spin/1', 20_000)
  t.equal(await publish(pub, 'spin/1', 'round'), 0, 'acknowledged')
  t.equal(await spun, 'round', 'delivered unchanged once the loop was stopped')
  for (let i = 0; i < 20; i++) {
    const got = next(sub, `out/flow-${i}`)
    await publish(pub, `in/flow-${i}`, String(i))
    t.equal(await got, `rewritten:${i}:spinner`)
  }
  const rows = (await ctl('list')).data as Array<{ name: string, stats?: { errors: number, timeouts: number } }>
  t.match(rows.find((r) => r.name === 'd-loop'), { stats: { timeouts: 1 } })
  t.ok((rows.find((r) => r.name === 'c-error')?.stats?.errors ?? 0) > 20, 'the erroring script failed on every message and was skipped')
  const counted = await metrics()
  t.equal(counted['lua_hook/timeouts'], 1)
  t.ok(counted['lua_hook/errors'] > 20)
})

t.test('the luahook command: unload, disable, enable, reload take effect on traffic', async (t) => {
  const sub = await harness.mqtt({ clientId: 'ctl-watcher' })
  await sub.subscribeAsync(['out/#', 'in/#', 'drop/#'], { qos: 1 })
  const pub = await harness.mqtt({ clientId: 'ctl-pub' })
  t.match(await ctl('unload', 'a-rewrite'), { text: 'Unload "a-rewrite" successfully' })
  let got = next(sub, 'in/plain')
  await publish(pub, 'in/plain', 'p')
  t.equal(await got, 'p', 'not rewritten once unloaded')
  t.match(await ctl('load', 'a-rewrite.lua'), { text: 'Load "a-rewrite.lua" successfully' })
  got = next(sub, 'out/again')
  await publish(pub, 'in/again', 'p')
  t.equal(await got, 'rewritten:p:ctl-pub')
  write('a-rewrite.lua', 'function on_message_publish(c, u, topic, payload, q, r) return topic, "v2:" .. payload, q, r end function register_hook() return "on_message_publish" end')
  t.match(await ctl('reload', 'a-rewrite'), { text: 'Reload "a-rewrite" successfully' })
  got = next(sub, 'in/v2')
  await publish(pub, 'in/v2', 'p')
  t.equal(await got, 'v2:p')
  t.match(await ctl('enable', 'e-off'), { text: 'Enable "e-off" successfully' })
  const dropped = next(sub, 'in/off', 1500).then(() => 'delivered', () => 'not delivered')
  await publish(pub, 'in/off', 'x')
  t.equal(await dropped, 'not delivered', 'the enabled script drops everything')
  t.match(await ctl('disable', 'e-off'), { text: 'Disable "e-off" successfully' })
  got = next(sub, 'in/on')
  await publish(pub, 'in/on', 'x')
  t.equal(await got, 'v2:x')
  await t.rejects(ctl('load', '../../etc/acl'), /bad script name/)
  await t.rejects(ctl('unload', 'nothing'), /not loaded/)
})

t.test('the memory limit is live: changed through the API, applied to the running VMs without a reload', async (t) => {
  write('f-memory.lua', 'function on_message_publish(c, u, topic, payload, q, r) if topic == "mem/big" then local s = string.rep("x", 4 * 1024 * 1024) return topic, tostring(#s), q, r end end function register_hook() return "on_message_publish" end')
  await ctl('load', 'f-memory')
  const sub = await harness.mqtt({ clientId: 'mem-watcher' })
  await sub.subscribeAsync('mem/#', { qos: 1 })
  const pub = await harness.mqtt({ clientId: 'mem-pub' })
  let got = next(sub, 'mem/big')
  await publish(pub, 'mem/big', 'x')
  t.equal(await got, String(4 * 1024 * 1024), 'under the default 16MB limit the script allocates 4MB')
  const errorsBefore = ((await ctl('list')).data as Array<{ name: string, stats?: { errors: number } }>).find((r) => r.name === 'f-memory')?.stats?.errors
  const registrations = node.plugins.registrations(PLUGIN)
  const changed = await harness.http('PUT', `/nodes/${node.name}/plugin_configs/${PLUGIN}`, { 'lua.hook.max_memory': '2MB' })
  t.equal(changed.status, 200)
  t.equal(node.plugins.registrations(PLUGIN), registrations, 'not reloaded')
  got = next(sub, 'mem/big')
  await publish(pub, 'mem/big', 'x')
  t.equal(await got, 'v2:x', 'past the new limit the call fails and is skipped: the message goes on as the script before it left it')
  const row = ((await ctl('list')).data as Array<{ name: string, stats?: { errors: number } }>).find((r) => r.name === 'f-memory')
  t.equal(row?.stats?.errors, (errorsBefore ?? 0) + 1, 'counted on the same load')
  const refused = await harness.http('PUT', `/nodes/${node.name}/plugin_configs/${PLUGIN}`, { 'lua.hook.timeout': 'forever' })
  t.equal(refused.status, 400, 'a bad value is refused')
})

t.test('unloading the plugin takes every hook back', async (t) => {
  t.equal(await api('PUT', `/nodes/${node.name}/plugins/${PLUGIN}/unload`), 200)
  t.equal(node.plugins.registrations(PLUGIN), 0)
  const sub = await harness.mqtt({ clientId: 'after' })
  await sub.subscribeAsync(['drop/#', 'forbidden/#'], { qos: 1 })
  const got = next(sub, 'drop/now')
  const pub = await harness.mqtt({ clientId: 'after-pub', protocolVersion: 5 })
  t.equal(await publish(pub, 'drop/now', 'kept'), 0)
  t.equal(await got, 'kept')
})
