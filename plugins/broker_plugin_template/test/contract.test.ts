// The whole contract in a real node beside the management API: the plugin's
// route answers under /api/v3, its ctl command runs, a live setting changes
// without a reload, and unloading it takes back every registration.
import t from 'tap'
import { startPluginNode } from '../../../lib/plugin-kit/testing.js'

// the kit's harness: a real node in-process with the template and the management API loaded
const harness = await startPluginNode({ plugin: 'broker_plugin_template', settings: { 'template.greeting_topic': 'hi' }, withApi: true })
t.teardown(harness.stop)
const broker = harness.node
const call = async (method: string, path: string, body?: unknown, auth?: string | null): Promise<{ status: number, body: unknown }> => {
  const { status, body: answer } = await harness.http(method, path, body, auth === undefined ? {} : { auth })
  return { status, body: answer }
}

async function greet (clientId: string): Promise<void> {
  const client = await harness.mqtt({ clientId })
  await client.endAsync()
}

t.test('the plugin route is served by the management API while the plugin is loaded', async (t) => {
  await greet('route-1')
  t.same(await call('GET', '/template/greetings'), { status: 200, body: { greetings: 1, topic: 'hi' } })
  t.equal((await call('GET', '/template/greetings', undefined, null)).status, 401, 'credentials are checked as on every route')
  t.equal((await call('DELETE', '/template/greetings')).status, 405, 'a method the route does not serve')
  t.equal((await call('GET', '/template/nothing')).status, 404)
})

t.test('the ctl command runs through the node', async (t) => {
  t.match(await broker.commands.run(['template', 'greetings']), { data: { greetings: 1 } })
})

t.test('a live setting changes in place: same load, new topic', async (t) => {
  const before = broker.plugins.registrations('broker_plugin_template')
  t.same(await call('PUT', `/nodes/${broker.name}/plugin_configs/broker_plugin_template`, { 'template.greeting_topic': 'hey' }), { status: 200, body: 'ok' })
  t.same((await call('GET', '/template/greetings')).body, { greetings: 1, topic: 'hey' }, 'the count survived: no reload')
  t.equal(broker.plugins.registrations('broker_plugin_template'), before)
  const watcher = await harness.mqtt({ clientId: 'watcher' })
  await watcher.subscribeAsync('hey/#')
  const got = new Promise<string>((resolve) => watcher.on('message', (topic) => { if (topic === 'hey/live-1') resolve(topic) }))
  await greet('live-1')
  t.equal(await got, 'hey/live-1')
})

t.test('a setting that is not live reloads the plugin (the count starts again)', async (t) => {
  t.same((await call('PUT', `/nodes/${broker.name}/plugin_configs/broker_plugin_template`, { 'template.alarm_after': '5' })).status, 200)
  t.same((await call('GET', '/template/greetings')).body, { greetings: 0, topic: 'hey' })
})

t.test('unload takes back the hook, the command and the route', async (t) => {
  t.equal((await call('PUT', `/nodes/${broker.name}/plugins/broker_plugin_template/unload`)).status, 200)
  t.equal(broker.plugins.registrations('broker_plugin_template'), 0)
  t.notOk(broker.hooks.owners('client.connected').includes('broker_plugin_template'))
  t.equal(broker.commands.get('template'), undefined)
  t.equal((await call('GET', '/template/greetings')).status, 404)
})
