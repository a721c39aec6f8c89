// broker_statsd in a real node beside the management API, pushing to a real
// UDP listener of this test every second: the lines it parses carry every
// metric as a counter and every statistic and runtime figure as a gauge,
// prefixed and tagged; after MQTT traffic the counters add up to the API's
// metrics and the gauges are its statistics; unloading stops the pushes; the
// sample rate, an empty prefix and tags, a host that does not resolve and a
// port nothing listens on; a bad conf value refused with file:line.
import { createSocket } from 'node:dgram'
import { once } from 'node:events'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { startPluginNode } from '../../../lib/plugin-kit/testing.js'
import type { StatsdStatus } from '../index.js'
import { StatsdListener, type StatsdLine } from './listener.js'

const listener = await StatsdListener.start()
t.teardown(async () => await listener.close())
const harness = await startPluginNode({
  plugin: 'broker_statsd',
  settings: { 'statsd.port': listener.port, 'statsd.flush_interval': '1s', 'statsd.prefix': 'mq', 'statsd.tags': 'node:%n,role:edge' },
  withApi: true
})
t.teardown(harness.stop)
const broker = harness.node
const NODE = broker.name

async function get<T> (path: string): Promise<T> {
  const { status, body } = await harness.http('GET', path)
  if (status !== 200) throw new Error(`GET ${path}: ${status} ${JSON.stringify(body)}`)
  return body as T
}

const metrics = async (): Promise<Record<string, number>> => await get(`/nodes/${NODE}/metrics`)
const stats = async (): Promise<Record<string, number>> => await get(`/nodes/${NODE}/stats`)
const status = async (): Promise<StatsdStatus> => (await broker.commands.run(['statsd', 'status'])).data as StatsdStatus
const settle = async (ms: number): Promise<void> => await new Promise((resolve) => setTimeout(resolve, ms))

/** The node's metrics once two reads in a row agree: the traffic has settled. */
async function quietMetrics (): Promise<Record<string, number>> {
  let before = await metrics()
  for (let i = 0; i < 100; i++) {
    await settle(200)
    const now = await metrics()
    if (JSON.stringify(now) === JSON.stringify(before)) return now
    before = now
  }
  throw new Error('the metrics kept moving')
}

/** Every push ends with this gauge (readings.ts). */
const LAST = 'mq.vm.handles'
const ends = (lines: StatsdLine[], from = 0): number[] => lines.flatMap((l, i) => i >= from && l.name === LAST ? [i] : [])

/** The lines of the latest complete push. */
function lastPush (): StatsdLine[] {
  const marks = ends(listener.lines)
  const end = marks[marks.length - 1]
  const start = marks.length > 1 ? marks[marks.length - 2] + 1 : 0
  return listener.lines.slice(start, end + 1)
}

const VM_COUNTERS = ['vm.cpu.user_ms', 'vm.cpu.system_ms', 'vm.gc.count', 'vm.gc.pause_ms']
const VM_GAUGES = [
  'vm.memory.rss', 'vm.memory.heap_total', 'vm.memory.heap_used', 'vm.memory.external', 'vm.memory.array_buffers',
  'vm.event_loop.delay.mean_ms', 'vm.event_loop.delay.p50_ms', 'vm.event_loop.delay.p99_ms', 'vm.event_loop.delay.max_ms',
  'vm.event_loop.utilization', 'vm.load1', 'vm.load5', 'vm.load15', 'vm.handles'
]
const dotted = (key: string): string => `mq.${key.replaceAll('/', '.')}`
let perPush = 0

t.test('every metric goes as a counter, every statistic and VM figure as a gauge, with the prefix and the DogStatsD tags', async (t) => {
  // the first push may have begun before the listener saw its start: take a whole one
  await listener.until('two pushes', (lines) => ends(lines).length >= 2)
  const push = lastPush()
  const [m, s] = [await metrics(), await stats()]
  const byName = new Map(push.map((l) => [l.name, l]))
  for (const key of Object.keys(m)) t.equal(byName.get(dotted(key))?.type, 'c', `${key} is a counter`)
  for (const key of Object.keys(s)) t.equal(byName.get(dotted(key))?.type, 'g', `${key} is a gauge`)
  for (const name of VM_COUNTERS) t.equal(byName.get(`mq.${name}`)?.type, 'c', `${name} is a counter`)
  for (const name of VM_GAUGES) t.equal(byName.get(`mq.${name}`)?.type, 'g', `${name} is a gauge`)
  perPush = Object.keys(m).length + Object.keys(s).length + VM_COUNTERS.length + VM_GAUGES.length
  t.equal(push.length, perPush, 'one line per figure, nothing else')
  // DogStatsD reserves @ in tags: the node name's @ goes as _
  const tags = ['role:edge', `node:${NODE.replaceAll('@', '_')}`].sort()
  for (const line of push) {
    t.same(line.tags?.slice().sort(), tags, `${line.name} is tagged`)
    t.equal(line.rate, undefined, 'sample rate 1 is not written')
    t.ok(Number.isFinite(line.value) && line.value >= 0, `${line.name} = ${line.value}`)
  }
  t.same(listener.garbage, [], 'every datagram parses')
})

t.test('after MQTT traffic the counters add up to the API\'s metrics and the gauges are its statistics', async (t) => {
  const subscriber = await harness.mqtt({ clientId: 'sd-sub' })
  await subscriber.subscribeAsync('load/#', { qos: 1 })
  let received = 0
  const all = new Promise<void>((resolve) => subscriber.on('message', () => { if (++received === 30) resolve() }))
  const publishers = await Promise.all([1, 2, 3].map(async (i) => await harness.mqtt({ clientId: `sd-pub-${i}` })))
  for (const [i, publisher] of publishers.entries()) {
    for (let n = 0; n < 10; n++) await publisher.publishAsync(`load/${i}`, `message ${n}`, { qos: 1 })
  }
  await all
  await publishers[0].endAsync()
  const m = await quietMetrics()
  const s = await stats()
  t.ok(m['messages/received'] >= 30 && m['bytes/received'] > 0, `traffic counted (${m['messages/received']} messages in)`)
  const mark = listener.lines.length
  await listener.until('two pushes after the traffic settled', (lines) => ends(lines, mark).length >= 2)
  // the plugin loaded at boot, when every counter was 0: the increments sum to the API's figure
  for (const [key, value] of Object.entries(m)) {
    const sum = listener.lines.filter((l) => l.name === dotted(key)).reduce((total, l) => total + l.value, 0)
    t.equal(sum, value, `${key}: the increments add up to ${value}`)
  }
  const push = lastPush()
  for (const [key, value] of Object.entries(s)) t.equal(push.find((l) => l.name === dotted(key))?.value, value, `${key} = ${value}`)
  t.equal(push.find((l) => l.name === 'mq.connections.count')?.value, 3, 'three clients connected')
  await subscriber.endAsync()
  for (const publisher of publishers.slice(1)) await publisher.endAsync()
})

t.test('the VM gauges agree with the node\'s own figures', async (t) => {
  const mark = listener.lines.length
  await listener.until('a push', (lines) => ends(lines, mark).length >= 1)
  const node = await get<{ memory_total: number, load1: string }>(`/nodes/${NODE}`)
  const value = (name: string): number => lastPush().find((l) => l.name === `mq.${name}`)?.value ?? NaN
  const rss = value('vm.memory.rss')
  t.ok(rss > 0.5 * node.memory_total && rss < 2 * node.memory_total, `rss ${rss} about the node's memory_total ${node.memory_total}`)
  t.ok(value('vm.memory.heap_used') > 0 && value('vm.memory.heap_used') <= value('vm.memory.heap_total'), 'heap used within the heap')
  t.ok(value('vm.memory.heap_total') < rss, 'the heap within the resident set')
  const load1 = Number(node.load1)
  t.ok(Math.abs(value('vm.load1') - load1) <= Math.max(1, load1 / 2), `load1 ${value('vm.load1')} about the node's ${load1}`)
  const utilization = value('vm.event_loop.utilization')
  t.ok(utilization >= 0 && utilization <= 1, `event-loop utilization ${utilization}`)
  t.ok(value('vm.event_loop.delay.max_ms') >= value('vm.event_loop.delay.p50_ms'), 'the max delay is at least the median')
  t.ok(value('vm.handles') >= 2, 'the listeners at least')
})

t.test('unloaded through the API no push goes out and nothing of it is left; loaded again the pushes resume', async (t) => {
  const unload = await harness.http('PUT', `/nodes/${NODE}/plugins/broker_statsd/unload`)
  t.same([unload.status, unload.body], [200, 'ok'])
  t.equal(broker.plugins.registrations('broker_statsd'), 0, 'sockets, timers, probes and the command released')
  t.equal(broker.commands.get('statsd'), undefined)
  // a datagram sent just before the unload may still be on its way
  await settle(300)
  const mark = listener.lines.length
  await settle(2500)
  t.equal(listener.lines.length, mark, 'no line in more than two flush intervals')
  const load = await harness.http('PUT', `/nodes/${NODE}/plugins/broker_statsd/load`)
  t.same([load.status, load.body], [200, 'ok'])
  await listener.until('a push after the load', (lines) => ends(lines, mark).length >= 1)
  t.pass('pushes again')
})

t.test('sample_rate 0.5, no prefix and no tags: lines carry |@0.5, about half of them go, plain StatsD names', async (t) => {
  const set = await harness.http('PUT', `/nodes/${NODE}/plugin_configs/broker_statsd`, { 'statsd.sample_rate': '0.5', 'statsd.prefix': '', 'statsd.tags': '' })
  t.equal(set.status, 200, 'the plugin reloads with the new settings')
  await settle(300)
  const mark = listener.lines.length
  let pushes = 0
  while (pushes < 3) {
    await settle(200)
    pushes = (await status()).pushes
  }
  const lines = listener.lines.slice(mark)
  t.ok(lines.length > 0 && lines.length < pushes * perPush, `${lines.length} of the ${pushes * perPush} lines of ${pushes} pushes went`)
  for (const line of lines) {
    t.equal(line.rate, 0.5, `${line.name} carries the rate`)
    t.equal(line.tags, undefined, 'no tags')
  }
  const names = new Set([...Object.keys(await metrics()), ...Object.keys(await stats())].map((k) => k.replaceAll('/', '.')).concat(VM_COUNTERS, VM_GAUGES))
  t.same(lines.filter((l) => !names.has(l.name)), [], 'each named as the API names it, dots for slashes, no prefix')
})

t.test('a host name that does not resolve and a port nothing listens on: failures counted, the node serves on', async (t) => {
  const set = await harness.http('PUT', `/nodes/${NODE}/plugin_configs/broker_statsd`, { 'statsd.host': 'no-such-host.invalid', 'statsd.sample_rate': '1' })
  t.equal(set.status, 200)
  let facts = await status()
  for (let i = 0; i < 150 && facts.failures.count < 2; i++) {
    await settle(200)
    facts = await status()
  }
  t.ok(facts.failures.count >= 2, `${facts.failures.count} failures counted`)
  t.match(facts.failures.last, /ENOTFOUND|EAI_AGAIN|EAI_FAIL|EAI_NONAME/, `the latest: ${facts.failures.last}`)
  t.equal(facts.pushes, 0, 'nothing pushed while the name does not resolve')
  t.equal(facts.address, undefined)

  // a port nothing listens on: UDP sends go, unanswered
  const closed = createSocket('udp4')
  closed.bind(0, '127.0.0.1')
  await once(closed, 'listening')
  const port = closed.address().port
  await new Promise<void>((resolve) => closed.close(() => resolve()))
  t.equal((await harness.http('PUT', `/nodes/${NODE}/plugin_configs/broker_statsd`, { 'statsd.host': '127.0.0.1', 'statsd.port': String(port) })).status, 200)
  facts = await status()
  for (let i = 0; i < 150 && facts.pushes < 2; i++) {
    await settle(200)
    facts = await status()
  }
  t.ok(facts.pushes >= 2 && facts.sent > 0, `${facts.pushes} pushes, ${facts.sent} datagrams to a closed port`)
  t.equal(broker.plugins.isActive('broker_statsd'), true)

  const subscriber = await harness.mqtt({ clientId: 'still-serving' })
  await subscriber.subscribeAsync('alive', { qos: 1 })
  const got = new Promise<string>((resolve) => subscriber.once('message', (_topic, payload) => resolve(payload.toString())))
  await subscriber.publishAsync('alive', 'yes', { qos: 1 })
  t.equal(await got, 'yes', 'MQTT goes on')
  await subscriber.endAsync()
})

t.test('a bad value in etc/plugins/broker_statsd.conf is refused with file:line at load', async (t) => {
  t.equal((await harness.http('PUT', `/nodes/${NODE}/plugins/broker_statsd/unload`)).status, 200)
  const file = join(harness.dataDir, 'etc', 'broker_statsd.conf')
  await writeFile(file, `statsd.prefix = mq\nstatsd.flush_interval = 10ms\n`)
  const load = await harness.http('PUT', `/nodes/${NODE}/plugins/broker_statsd/load`)
  t.equal(load.status, 500)
  t.match((load.body as { message: string }).message, /broker_statsd\.conf:2: statsd\.flush_interval: .*shorter than 1000ms/)
  t.equal(broker.plugins.isActive('broker_statsd'), false)
  // (the keys set through the API above live in data/plugins/broker_statsd.conf, over this file)
  await writeFile(file, '# a comment\n\nstatsd.flush_interval = 2d\n')
  const again = await harness.http('PUT', `/nodes/${NODE}/plugins/broker_statsd/load`)
  t.match(again, { status: 500, body: { message: /broker_statsd\.conf:3: statsd\.flush_interval: .*longer than a day/ } })
  await writeFile(file, '')
  t.equal((await harness.http('PUT', `/nodes/${NODE}/plugins/broker_statsd/load`)).status, 200, 'loads once the file is fixed')
})
