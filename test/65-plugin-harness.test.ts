// The plugin kit's test harness (issue 16 #3): a real node in this process
// with broker_plugin_template loaded, its settings given as the .conf file
// would, connected MQTT clients over tcp and ws, the management API when
// asked for, and everything closed by stop().
import t from 'tap'
import { startPluginNode, type MqttClient } from '../lib/plugin-kit/testing.js'

const PLUGIN = 'broker_plugin_template'

/** The next message on `topic`; others (the subscriber's own greeting) are skipped. */
async function messageOn (client: MqttClient, topic: string, timeoutMs = 10_000): Promise<string> {
  return await new Promise((resolve, reject) => {
    const timer = setTimeout(() => { client.off('message', onMessage); reject(new Error(`no message on ${topic} within ${timeoutMs} ms`)) }, timeoutMs)
    function onMessage (got: string, payload: Buffer): void {
      if (got !== topic) return
      clearTimeout(timer)
      client.off('message', onMessage)
      resolve(payload.toString())
    }
    client.on('message', onMessage)
  })
}

t.test('the plugin is loaded with its settings; clients on tcp and ws are greeted; stop closes them', async (t) => {
  const node = await startPluginNode({ plugin: PLUGIN, settings: { 'template.greeting_topic': 'hi' }, listeners: ['tcp', 'ws'] })
  let stopped = false
  t.teardown(async () => { if (!stopped) await node.stop() })
  t.ok(node.node.plugins.isActive(PLUGIN), 'loaded')
  t.same(node.node.hooks.owners('client.connected').filter((owner) => owner === PLUGIN), [PLUGIN], 'its client.connected handler')

  const watcher = await node.mqtt({ clientId: 'watcher' })
  await watcher.subscribeAsync('hi/#', { qos: 0 })
  const tcpGreeting = messageOn(watcher, 'hi/visitor-tcp')
  const visitor = await node.mqtt({ clientId: 'visitor-tcp', protocolVersion: 5 })
  t.equal(await tcpGreeting, 'hello visitor-tcp', 'greeted on hi/<clientId> (the setting, not the default)')
  const wsGreeting = messageOn(watcher, 'hi/visitor-ws')
  const wsVisitor = await node.mqtt({ clientId: 'visitor-ws', listener: 'ws' })
  t.equal(await wsGreeting, 'hello visitor-ws', 'a ws client too')
  t.match(node.url('ws'), /^ws:\/\/127\.0\.0\.1:\d+\/mqtt$/)

  await node.stop()
  stopped = true
  for (const client of [watcher, visitor, wsVisitor]) t.ok(client.disconnected || client.disconnecting, 'the clients are closed by stop()')
  t.equal(node.node.lifecycle.state, 'stopped')
})

t.test('withApi: the management API on a free port answers with the default application\'s credentials', async (t) => {
  const node = await startPluginNode({ plugin: PLUGIN, withApi: true })
  t.teardown(node.stop)
  t.ok(node.node.plugins.isActive('broker_management'), 'the API is loaded after the plugin')
  const { status, body } = await node.http('GET', '/nodes/')
  t.equal(status, 200)
  t.match(body, [{ node: node.node.name, node_status: 'Running' }])
  t.equal((await node.http('GET', '/nodes/', undefined, { auth: null })).status, 401, 'auth: null sends no credentials')
})

t.test('without withApi, http() says what is missing', async (t) => {
  const node = await startPluginNode({ plugin: PLUGIN })
  t.teardown(node.stop)
  await t.rejects(node.http('GET', '/nodes/'), /withApi/)
})

t.test('a plugin that fails to load rejects with its load error, and leaves no node behind', async (t) => {
  await t.rejects(startPluginNode({ plugin: PLUGIN, settings: { 'template.greeting_topic': 'a/#' } }), /greeting_topic/)
  await t.rejects(startPluginNode({ plugin: 'broker_no_such_plugin' }), { code: 'not_found' })
})
