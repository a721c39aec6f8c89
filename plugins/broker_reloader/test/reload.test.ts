// broker_ctl reload and the API route on a node running from sources, with a
// fixture plugin of two modules in the test's folder: the new code of either
// module runs after a reload, everything the old load registered is gone,
// connected clients keep publishing and receiving through it, and a broken
// new version (syntax error, load throws, settings refused, wrong export)
// leaves the old one running and says why.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { CtlError, startPluginNode, type MqttClient } from '../../../lib/plugin-kit/testing.js'
import { CODE_PLUGIN, writeAnswer, writeCodePlugin, until } from './fixtures.js'

const dir = t.testdir({})
await writeCodePlugin(dir, 'ts')
const logFile = join(dir, 'reloader.log')
const harness = await startPluginNode({
  plugin: 'broker_reloader',
  settings: { 'reloader.interval': 0, 'reloader.logfile': logFile },
  others: { [CODE_PLUGIN]: { 'fixture.greeting': 'hello' } },
  pluginDirs: [dir],
  withApi: true
})
t.teardown(harness.stop)
const node = harness.node
const nodeName = node.name

const ticks = (): Record<string, number> => (globalThis as unknown as { __fixtureTicks: Record<string, number> }).__fixtureTicks
const fixture = async (): Promise<unknown> => (await node.commands.run(['fixture'])).data
const reload = async (plugin = CODE_PLUGIN): Promise<unknown> => (await node.commands.run(['reload', plugin])).data
/** the CtlError a reload ends with */
async function refused (plugin = CODE_PLUGIN): Promise<CtlError> {
  return await node.commands.run(['reload', plugin]).then(() => { throw new Error('expected a refusal') }, (err: CtlError) => err)
}
const logLines = async (): Promise<string[]> => (await readFile(logFile, 'utf8')).trim().split('\n')
/** Checks the log's last line; lines are appended after the reply, so it waits (to a generous deadline) for one that matches. */
async function lastLogLineMatches (t: Test, expected: RegExp | string, message = 'the last line of the reload log'): Promise<void> {
  const deadline = Date.now() + 10_000
  let last = (await logLines()).at(-1)
  while (last?.match(expected) == null && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20))
    last = (await logLines()).at(-1)
  }
  t.match(last, expected, message)
}


t.test('a change of a second module alone is reloaded; the old load is gone, clients stay', async (t) => {
  t.equal(await fixture(), 'v1')
  t.same((await harness.http('GET', '/fixture/version')).body, { answer: 'v1', greeting: 'hello' })

  // a subscriber and a publisher that keep going through the reload
  const subscriber = await harness.mqtt({ clientId: 'sub', clean: true })
  const publisher = await harness.mqtt({ clientId: 'pub', clean: true })
  const closed: string[] = []
  for (const [name, client] of [['sub', subscriber], ['pub', publisher]] as Array<[string, MqttClient]>) client.on('close', () => closed.push(name))
  await subscriber.subscribeAsync('load/#', { qos: 1 })
  const received: number[] = []
  subscriber.on('message', (topic, payload) => { if (topic === 'load/n') received.push(Number(payload.toString())) })
  const traffic = { stop: false, sent: 0 }
  const publishing = (async () => {
    while (!traffic.stop) await publisher.publishAsync('load/n', String(traffic.sent++), { qos: 1 })
  })()
  await until('some traffic before the reload', () => received.length >= 20)

  const registrations = node.plugins.registrations(CODE_PLUGIN)
  await writeAnswer(dir, 'ts', 'v2')
  t.match(await reload(), { plugin: CODE_PLUGIN, version: '1.0.0', active: true })
  const v1Ticks = ticks().v1
  t.equal(await fixture(), 'v2', 'the new code of lib/answer runs')
  t.same((await harness.http('GET', '/fixture/version')).body, { answer: 'v2', greeting: 'hello' }, 'the route is the new load\'s, with the same settings')
  t.match(await harness.http('GET', '/fixture/refuse'), { status: 409, body: { code: 115, message: 'refused by v2' } }, 'the kit is shared: its RouteError is the API\'s')
  t.equal(node.plugins.registrations(CODE_PLUGIN), registrations, 'as many registrations as before: none left over')
  t.same(node.hooks.owners('client.connected').filter((o) => o === CODE_PLUGIN), [CODE_PLUGIN], 'one hook handler: the new one')

  await until('the new timer ticking', () => (ticks().v2 ?? 0) >= 5)
  t.equal(ticks().v1, v1Ticks, 'the old timer stopped')

  const hello = new Promise<string>((resolve) => subscriber.on('message', (topic, payload) => { if (topic === 'fixture/connected/late') resolve(payload.toString()) }))
  await subscriber.subscribeAsync('fixture/connected/late')
  await (await harness.mqtt({ clientId: 'late' })).endAsync()
  t.equal(await hello, 'v2', 'the new hook answers')

  const sentBefore = traffic.sent
  await until('traffic after the reload', () => traffic.sent >= sentBefore + 20)
  traffic.stop = true
  await publishing
  await until('every message delivered', () => received.length === traffic.sent)
  t.same(received, [...Array(traffic.sent).keys()], 'every QoS 1 message arrived once, in order')
  t.same(closed, [], 'no client was disconnected')
  t.ok(subscriber.connected && publisher.connected)
  await lastLogLineMatches(t, new RegExp(`^\\d{4}-\\d\\d-\\d\\dT\\S+[+-]\\d\\d:\\d\\d ${CODE_PLUGIN}@${nodeName} by ctl: reloaded, version 1\\.0\\.0, running$`))
})

t.test('a broken new version leaves the old one running and says why', async (t) => {
  t.equal(await fixture(), 'v2')
  const cases: Array<{ what: string, write: () => Promise<void>, why: RegExp }> = [
    {
      what: 'a syntax error in the second module',
      write: async () => { await writeAnswer(dir, 'ts', 'v3', 'export const broken = (\n') },
      why: new RegExp(`${CODE_PLUGIN}: its new code does not import: .*answer\\.ts`)
    },
    {
      what: 'a module that throws as it is imported',
      write: async () => { await writeAnswer(dir, 'ts', 'v3', "throw new Error('v3 throws at import')") },
      why: new RegExp(`${CODE_PLUGIN}: its new code does not import: \\S*${CODE_PLUGIN}/lib/answer\\.ts:2: Error: v3 throws at import`)
    },
    {
      what: 'a load that throws',
      write: async () => { await writeCodePlugin(dir, 'ts', { answer: 'v3', loadPrelude: "throw new Error('v3 will not load')" }) },
      why: new RegExp(`${CODE_PLUGIN}: its new code failed to load: v3 will not load; its old code was loaded again`)
    },
    {
      what: 'a schema that refuses the settings file',
      write: async () => { await writeCodePlugin(dir, 'ts', { answer: 'v3', greetingSchema: "Joi.string().valid('hi')" }) },
      why: new RegExp(`${CODE_PLUGIN}: its new code refuses its settings: \\S*${CODE_PLUGIN}\\.conf:1: fixture\\.greeting: `)
    },
    {
      what: 'a module that exports another plugin',
      write: async () => { await writeCodePlugin(dir, 'ts', { answer: 'v3', name: 'broker_other' }) },
      why: new RegExp(`index\\.ts does not export a plugin named ${CODE_PLUGIN}`)
    }
  ]
  for (const { what, write, why } of cases) {
    await write()
    const err = await refused()
    t.equal(err.exit, 1, `${what}: broker_ctl exits 1`)
    t.match(err.message, why, `${what}: says why`)
    await lastLogLineMatches(t, new RegExp(`${CODE_PLUGIN}@${nodeName} by ctl: failed: `), `${what}: logged`)
    t.equal(node.plugins.isActive(CODE_PLUGIN), true, `${what}: still running`)
    t.same((await harness.http('GET', '/fixture/version')).body, { answer: 'v2', greeting: 'hello' }, `${what}: the old code answers`)
    const api = await harness.http('PUT', `/nodes/${nodeName}/plugins/${CODE_PLUGIN}/reload`)
    t.match(api, { status: 500, body: { code: 102, message: why } }, `${what}: the API refuses with the same reason`)
  }
  t.same(node.hooks.owners('client.connected').filter((o) => o === CODE_PLUGIN), [CODE_PLUGIN], 'one set of handlers after all that')

  await writeCodePlugin(dir, 'ts', { answer: 'v3', version: '1.1.0' })
  const api = await harness.http('PUT', `/nodes/${nodeName}/plugins/${CODE_PLUGIN}/reload`)
  t.match(api, { status: 200, body: { node: nodeName, plugin: CODE_PLUGIN, version: '1.1.0', active: true } }, 'fixed: the API reloads it')
  t.equal(await fixture(), 'v3')
  const listed = (await harness.http('GET', `/nodes/${nodeName}/plugins`)).body as Array<{ name: string, version: string }>
  t.equal(listed.find((p) => p.name === CODE_PLUGIN)?.version, '1.1.0', 'the plugin list shows the new version')
  await lastLogLineMatches(t, `${CODE_PLUGIN}@${nodeName} by api: reloaded, version 1.1.0, running`)
})

t.test('what the reloader refuses', async (t) => {
  const self = await refused('broker_reloader')
  t.equal(self.exit, 1)
  t.match(self.message, 'broker_reloader cannot reload its own code')
  t.equal(node.plugins.isActive('broker_reloader'), true, 'it runs on')
  t.match(await harness.http('PUT', `/nodes/${nodeName}/plugins/broker_reloader/reload`), { status: 400, body: { message: /cannot reload its own code/ } })

  t.match((await refused('broker_nothing')).message, 'plugin broker_nothing not found')
  t.match(await harness.http('PUT', `/nodes/${nodeName}/plugins/broker_nothing/reload`), { status: 404 })
  t.match(await harness.http('PUT', `/nodes/nobody@nowhere/plugins/${CODE_PLUGIN}/reload`), { status: 404, body: { message: /not found/ } })
  t.equal((await harness.http('PUT', `/nodes/${nodeName}/plugins/${CODE_PLUGIN}/reload`, undefined, { auth: null })).status, 401)
  t.equal((await harness.http('GET', `/nodes/${nodeName}/plugins/${CODE_PLUGIN}/reload`)).status, 405)

  for (const args of [['reload'], ['reload', 'a', 'b']]) {
    const usage = await node.commands.run(args).then(() => undefined, (err: CtlError) => err)
    t.equal(usage?.exit, 2, `${args.join(' ')}: a usage error`)
  }
})

t.test('when the old code does not load again either, the plugin is not running and the reason says so', async (t) => {
  const global = globalThis as unknown as { __fixtureRefuseLoads?: boolean }
  global.__fixtureRefuseLoads = true
  t.teardown(() => { delete global.__fixtureRefuseLoads })
  t.match((await refused()).message, `${CODE_PLUGIN}: its new code failed to load: no load now; its old code failed to load again: plugin ${CODE_PLUGIN} failed to load: no load now`)
  t.equal(node.plugins.isActive(CODE_PLUGIN), false)
  t.equal(node.plugins.registrations(CODE_PLUGIN), 0, 'nothing of either load left')
  delete global.__fixtureRefuseLoads
  await node.plugins.load(CODE_PLUGIN)
  t.equal(await fixture(), 'v3', 'it loads again by hand')
})

t.test('an inactive plugin gets its new code at its next load', async (t) => {
  await node.plugins.unload(CODE_PLUGIN)
  await writeAnswer(dir, 'ts', 'v4')
  t.match(await reload(), { plugin: CODE_PLUGIN, active: false })
  t.equal(node.plugins.isActive(CODE_PLUGIN), false, 'not loaded by it')
  await lastLogLineMatches(t, 'reloaded, version 1.1.0, not running (the new code is used at its next load)')
  await node.plugins.load(CODE_PLUGIN)
  t.equal(await fixture(), 'v4')
})

t.test('reloading the management API answers first, then reloads it', async (t) => {
  t.match(await harness.http('PUT', `/nodes/${nodeName}/plugins/broker_management/reload`), { status: 200, body: { plugin: 'broker_management', reload: 'started' } })
  await lastLogLineMatches(t, `broker_management@${nodeName} by api: reloaded`)
  t.equal((await harness.http('GET', '/fixture/version')).status, 200, 'the new API serves')
})

t.test('unloaded through the API its command and route are gone; loaded again they serve', async (t) => {
  t.equal((await harness.http('PUT', `/nodes/${nodeName}/plugins/broker_reloader/unload`)).status, 200)
  t.equal(node.plugins.registrations('broker_reloader'), 0, 'nothing of it left')
  t.match(await node.commands.run(['reload', CODE_PLUGIN]).then(() => undefined, (err: CtlError) => err), { exit: 2, message: /unknown command: reload \(broker_reloader adds it/ })
  t.equal((await harness.http('PUT', `/nodes/${nodeName}/plugins/${CODE_PLUGIN}/reload`)).status, 404)
  t.equal((await harness.http('PUT', `/nodes/${nodeName}/plugins/broker_reloader/load`)).status, 200)
  t.match(await reload(), { plugin: CODE_PLUGIN, active: true })
  t.match((await harness.http('PUT', `/nodes/${nodeName}/plugins/${CODE_PLUGIN}/reload`)), { status: 200 })
})
