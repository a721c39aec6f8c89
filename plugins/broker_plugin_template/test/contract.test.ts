// The whole contract in a real node beside the management API: the plugin's
// route answers under /api/v3, its ctl command runs, a live setting changes
// without a reload, and unloading it takes back every registration.
import t from 'tap'
import { freePort, startBroker } from '../../../test/helpers/broker.js'
import { closeAll, connect } from '../../../test/helpers/mqtt.js'

const apiPort = await freePort()
const broker = await startBroker({}, ['tcp'], undefined, {
  plugins: {
    broker_management: { 'management.listener.http': `127.0.0.1:${apiPort}` },
    broker_plugin_template: { 'template.greeting_topic': 'hi' }
  }
})
t.teardown(broker.stop)
const url = `mqtt://127.0.0.1:${broker.port()}`
const AUTH = `Basic ${Buffer.from('admin:public').toString('base64')}`

async function call (method: string, path: string, body?: unknown, auth: string | null = AUTH): Promise<{ status: number, body: unknown }> {
  const headers: Record<string, string> = {}
  if (auth !== null) headers.authorization = auth
  if (body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(`http://127.0.0.1:${apiPort}/api/v3${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  const text = await res.text()
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text) }
}

async function greet (clientId: string): Promise<void> {
  await closeAll(await connect(url, { clientId }))
}

t.test('the plugin route is served by the management API while the plugin is loaded', async (t) => {
  await greet('route-1')
  t.same(await call('GET', '/template/greetings'), { status: 200, body: { greetings: 1, topic: 'hi' } })
  t.equal((await call('GET', '/template/greetings', undefined, null)).status, 401, 'credentials are checked as on every route')
  t.equal((await call('DELETE', '/template/greetings')).status, 405, 'a method the route does not serve')
  t.equal((await call('GET', '/template/nothing')).status, 404)
})

t.test('the ctl command runs through the node', async (t) => {
  t.match(await broker.node.commands.run(['template', 'greetings']), { data: { greetings: 1 } })
})

t.test('a live setting changes in place: same load, new topic', async (t) => {
  const before = broker.node.plugins.registrations('broker_plugin_template')
  t.same(await call('PUT', `/nodes/${broker.node.name}/plugin_configs/broker_plugin_template`, { 'template.greeting_topic': 'hey' }), { status: 200, body: 'ok' })
  t.same((await call('GET', '/template/greetings')).body, { greetings: 1, topic: 'hey' }, 'the count survived: no reload')
  t.equal(broker.node.plugins.registrations('broker_plugin_template'), before)
  const watcher = await connect(url, { clientId: 'watcher' })
  t.teardown(async () => { await closeAll(watcher) })
  await watcher.subscribeAsync('hey/#')
  const got = new Promise<string>((resolve) => watcher.on('message', (topic) => { if (topic === 'hey/live-1') resolve(topic) }))
  await greet('live-1')
  t.equal(await got, 'hey/live-1')
})

t.test('a setting that is not live reloads the plugin (the count starts again)', async (t) => {
  t.same((await call('PUT', `/nodes/${broker.node.name}/plugin_configs/broker_plugin_template`, { 'template.alarm_after': '5' })).status, 200)
  t.same((await call('GET', '/template/greetings')).body, { greetings: 0, topic: 'hey' })
})

t.test('unload takes back the hook, the command and the route', async (t) => {
  t.equal((await call('PUT', `/nodes/${broker.node.name}/plugins/broker_plugin_template/unload`)).status, 200)
  t.equal(broker.node.plugins.registrations('broker_plugin_template'), 0)
  t.notOk(broker.node.hooks.owners('client.connected').includes('broker_plugin_template'))
  t.equal(broker.node.commands.get('template'), undefined)
  t.equal((await call('GET', '/template/greetings')).status, 404)
})
