// Issue 16 #1: every plugin in plugins/ is loaded and unloaded 200 times in
// a real node under steady MQTT traffic (test/helpers/traffic.ts), each
// against a real backend (test/helpers/plugin-backends.ts). After its
// cycles nothing of it is left: no hook handler it owns, no broker_ctl
// command, no registration, no listener record, no route, no alarm, no
// more active handles (sockets, servers, timers …) than before it, and the
// heap after the last 150 cycles is where it was after the first 50. The
// traffic flows all along and no client is refused or dropped. A fixture
// registering one of everything a context offers goes through the same
// cycles, and one that leaks shows the checks see a leak.
// LEAK_CYCLES=<n> runs fewer cycles (a quick local run); the bound is for 200.
import { mkdir, readdir, writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import t, { type Test } from 'tap'
import { INSTALL_ROOT, pluginConfText, startTestNode, type HookName, type TestNode } from '../lib/plugin-kit/testing.js'
import { startPluginBackends, type PluginBackends } from './helpers/plugin-backends.js'
import { startTraffic, type Traffic } from './helpers/traffic.js'

const CYCLES = Number(process.env.LEAK_CYCLES ?? 200)
/** the heap is measured after this many cycles (imports, caches and JIT settle) and after the last */
const WARMUP = Math.min(50, Math.floor(CYCLES / 4))
const HEAP_BOUND_MB = 2
/** how long active handles may take to go back to the baseline after the cycles (sockets close asynchronously) */
const SETTLE_MS = 15_000
// 19 plugins: about 6 minutes on an idle 2-core box (the Lua VMs and the reloader's folder scans cost most);
// a shared, loaded one has taken 10 and more, so the limit is generous
t.setTimeout(2_400_000)

/** Every hook point (the `satisfies` fails to compile when one is added and not listed). */
const HOOKS = Object.keys({
  'client.authenticate': 1,
  'client.check_acl': 1,
  'client.enhanced_auth': 1,
  'client.connect': 1,
  'client.connack': 1,
  'client.connected': 1,
  'client.subscribe': 1,
  'client.unsubscribe': 1,
  'session.terminated': 1,
  'client.disconnected': 1,
  'session.subscribed': 1,
  'session.unsubscribed': 1,
  'message.publish': 1,
  'message.accepted': 1,
  'message.delivered': 1,
  'message.acked': 1,
  'message.dropped': 1
} satisfies Record<HookName, 1>) as HookName[]

// the file runs without --expose-gc (tap passes node arguments to every file alike): expose it here
const gc: () => void = (globalThis as { gc?: () => void }).gc ?? (() => {
  setFlagsFromString('--expose-gc')
  return runInNewContext('gc') as () => void
})()

async function discoverPlugins (): Promise<string[]> {
  const dir = join(INSTALL_ROOT, 'plugins')
  const entries = await readdir(dir, { withFileTypes: true })
  return entries.filter((e) => e.isDirectory() && e.name.startsWith('broker_') && existsSync(join(dir, e.name, 'index.ts'))).map((e) => e.name).sort()
}

type Handles = Record<string, number>

function activeHandles (): Handles {
  const counts: Handles = {}
  for (const type of process.getActiveResourcesInfo()) counts[type] = (counts[type] ?? 0) + 1
  return counts
}

/** The types of which there are more now than in `baseline`. */
function excess (now: Handles, baseline: Handles): Handles {
  return Object.fromEntries(Object.entries(now).filter(([type, count]) => count > (baseline[type] ?? 0)))
}

const MB = 1024 * 1024
const mb = (bytes: number): string => (bytes / MB).toFixed(2)

/** The heap in use after full collections, traffic paused (so no message is half way). */
async function settledHeap (traffic: Traffic): Promise<number> {
  await traffic.pause()
  for (let i = 0; i < 3; i++) {
    gc()
    await new Promise((resolve) => setImmediate(resolve))
  }
  const used = process.memoryUsage().heapUsed
  traffic.resume()
  return used
}

/** Waits, traffic paused, until no handle type counts more than in `baseline`; resolves with the last count. */
async function settledHandles (traffic: Traffic, baseline: Handles, settleMs = SETTLE_MS): Promise<Handles> {
  await traffic.pause()
  const deadline = Date.now() + settleMs
  let now = activeHandles()
  while (Object.keys(excess(now, baseline)).length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50))
    now = activeHandles()
  }
  traffic.resume()
  return now
}

/** What plugins hold in the node, apart from handles. */
function holdings (test: TestNode, name: string): Record<string, unknown> {
  const { node } = test
  return {
    active: node.plugins.isActive(name),
    registrations: node.plugins.registrations(name),
    hooks: HOOKS.filter((hook) => node.hooks.owners(hook).includes(name)),
    commands: node.commands.list().map((c) => c.name),
    routes: node.plugins.routes.list(),
    listeners: node.plugins.listenerRecords().length,
    // the node's own os_mon alarms come and go with the machine's load
    alarms: node.observability.alarms.present().map((a) => a.id).filter((id) => !id.endsWith('_watermark'))
  }
}

const plugins = await discoverPlugins()
let backends: PluginBackends
let test: TestNode
let traffic: Traffic
let baselineHandles: Handles
const began = Date.now()
const figures: string[] = []

t.before(async () => {
  backends = await startPluginBackends(plugins)
  test = await startTestNode({ settings: { 'mqtt.allow_anonymous': 'true', 'mqtt.acl_nomatch': 'allow' }, pluginDirs: [join(INSTALL_ROOT, 'test', 'fixtures', 'leak-plugins')] })
  traffic = await startTraffic(`mqtt://127.0.0.1:${test.port()}`)
  await traffic.flowing(0)
  baselineHandles = await settledHandles(traffic, {})
  t.comment(`plugins found: ${plugins.join(', ')}; ${CYCLES} load/unload cycles each; baseline handles ${JSON.stringify(baselineHandles)}`)
})

t.teardown(async () => {
  await traffic?.stop()
  await test?.stop()
  await backends?.close()
})

t.test('every plugin in plugins/ is covered', async (t) => {
  t.ok(plugins.length >= 11, `${plugins.length} plugins found`)
  for (const name of plugins) t.ok(backends.knows(name), `${name}: this test knows its backend and settings`)
})

/** Loads and unloads `name` `CYCLES` times under the traffic and checks that nothing of it is left. */
async function leakCheck (t: Test, name: string, settings: Record<string, string | number>): Promise<void> {
  await writeFile(join(test.dataDir, 'etc', `${name}.conf`), pluginConfText(settings))
  for (const [path, text] of Object.entries(backends.dataFiles(name))) {
    await mkdir(dirname(join(test.dataDir, path)), { recursive: true })
    await writeFile(join(test.dataDir, path), text)
  }
  const before = holdings(test, name)
  const problemsBefore = traffic.problems.length
  const deliveredBefore = traffic.delivered
  const churnsBefore = traffic.churns
  const started = Date.now()
  const cpu = process.cpuUsage()
  const registrations = new Set<number>()
  let heapWarm = 0
  let mark = traffic.delivered
  for (let cycle = 1; cycle <= CYCLES; cycle++) {
    try {
      await test.node.plugins.load(name)
    } catch (err) {
      t.fail(`${name} failed to load (cycle ${cycle}): ${(err as Error).message}`)
      return
    }
    registrations.add(test.node.plugins.registrations(name))
    await test.node.plugins.unload(name)
    if (cycle % 25 === 0) {
      // the traffic goes on between loads: wait for it to move on, not for time to pass
      await traffic.flowing(mark)
      mark = traffic.delivered
    }
    if (cycle === WARMUP) heapWarm = await settledHeap(traffic)
  }
  const ms = Date.now() - started
  const { user, system } = process.cpuUsage(cpu)
  const heapEnd = await settledHeap(traffic)
  const handles = await settledHandles(traffic, baselineHandles)

  t.ok(Math.min(...registrations) > 0, `each load registered something (${[...registrations].join('/')} registrations)`)
  t.same(holdings(test, name), before, 'no hook, command, registration, route, listener or alarm left')
  t.same(excess(handles, baselineHandles), {}, 'no more active handles of any type than before the plugin')
  const grew = heapEnd - heapWarm
  t.ok(grew < HEAP_BOUND_MB * MB, `heap after cycle ${CYCLES} − after cycle ${WARMUP} = ${mb(grew)} MB < ${HEAP_BOUND_MB} MB`)
  t.same(traffic.problems.slice(problemsBefore), [], 'no traffic client refused or dropped')
  t.ok(traffic.delivered > deliveredBefore && traffic.churns > churnsBefore, 'messages delivered and clients connected during the cycles')
  const line = `${name}: ${CYCLES} cycles in ${(ms / 1000).toFixed(1)} s (this process's CPU ${((user + system) / 1e6).toFixed(1)} s); heap ${mb(heapWarm)} MB after ${WARMUP}, ${mb(heapEnd)} MB after ${CYCLES} (${grew >= 0 ? '+' : ''}${mb(grew)} MB); ` +
    `${traffic.delivered - deliveredBefore} messages delivered, ${traffic.churns - churnsBefore} client rounds; handles ${JSON.stringify(handles)}`
  figures.push(line)
  t.comment(line)
}

t.test('the checks see what a plugin leaves behind (a fixture that opens an interval and a server outside its context)', async (t) => {
  const { leaked } = await import('./fixtures/leak-plugins/broker_fixture_leaky/index.js')
  t.teardown(async () => {
    for (const { interval, server } of leaked.splice(0)) {
      clearInterval(interval)
      await new Promise((resolve) => server.close(resolve))
    }
  })
  for (let cycle = 0; cycle < 5; cycle++) {
    await test.node.plugins.load('broker_fixture_leaky')
    await test.node.plugins.unload('broker_fixture_leaky')
  }
  // they stay: a short look is enough
  const handles = excess(await settledHandles(traffic, baselineHandles, 200), baselineHandles)
  t.ok(handles.Timeout >= (baselineHandles.Timeout ?? 0) + 5, `5 leaked intervals seen (${handles.Timeout} timers, ${baselineHandles.Timeout ?? 0} before)`)
  t.ok(handles.TCPServerWrap >= (baselineHandles.TCPServerWrap ?? 0) + 5, `5 leaked servers seen (${handles.TCPServerWrap} servers, ${baselineHandles.TCPServerWrap ?? 0} before)`)
})

t.test(`a fixture registering one of everything a context offers: ${CYCLES} cycles leave nothing behind`, async (t) => {
  await leakCheck(t, 'broker_fixture_everything', {})
})

for (const name of plugins) {
  t.test(`${name}: ${CYCLES} load/unload cycles under traffic leave nothing behind`, async (t) => {
    await leakCheck(t, name, backends.settings(name))
  })
}

t.test('summary', async (t) => {
  const heap = await settledHeap(traffic)
  t.comment(`${plugins.length} plugins (and a fixture) × ${CYCLES} cycles in ${((Date.now() - began) / 1000).toFixed(1)} s (backends' start included); heap now ${mb(heap)} MB; ` +
    `${traffic.delivered} messages delivered, ${traffic.churns} client rounds, ${traffic.problems.length} traffic problems`)
  for (const line of figures) t.comment(line)
  t.same(traffic.problems, [], 'no traffic problem over the whole run')
})
