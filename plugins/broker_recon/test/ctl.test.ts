// broker_recon on a real node process with the management API, asked by the
// real `bin/broker_ctl` (text and --json) and over HTTP: 20 clients, a
// subscriber that never acknowledges (its in-flight window fills, the rest
// queues) and a publisher of big messages give the top lists real figures;
// memory, heap spaces, handles, event loop, GC and node_stats read the
// process; a heap snapshot is written inside the data directory (0600, JSON)
// and every path out of it is refused; the route answers the same figures;
// unloading through the API takes the command and the route away; a bad
// conf value is refused with file:line.
import { mkdir, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import type { ClientLoadFacts } from '../../../lib/plugin-kit/index.js'
import { spawnCtlNode } from '../../../test/helpers/ctl.js'
import { closeAll, connect, type MqttClient } from '../../../test/helpers/mqtt.js'
import { RawClient } from '../../../test/helpers/raw-client.js'
import type { ReconFacts } from '../index.js'

// about 35 broker_ctl runs (a Node.js process each) and a heap snapshot of the node: over tap's 120 s on a
// loaded 2-core box (it ran out at 120 s beside 5 other test files, load 12), so the limit is generous
t.setTimeout(480_000)

const node = await spawnCtlNode({ broker_recon: { 'recon.top': 5 }, broker_management: {} })
t.teardown(node.stop)
const NODE = 'broker@127.0.0.1'

async function api (method: string, path: string): Promise<{ status: number, body: unknown }> {
  const res = await fetch(`${node.api}/api/v3${path}`, { method, headers: { authorization: `Basic ${Buffer.from('admin:public').toString('base64')}` } })
  return { status: res.status, body: await res.json() }
}

async function json<T> (...args: string[]): Promise<T> {
  const { code, data } = await node.json<T>('recon', ...args)
  if (code !== 0) throw new Error(`recon ${args.join(' ')} exited ${code}`)
  return data
}

const settle = async (ms: number): Promise<void> => await new Promise((resolve) => setTimeout(resolve, ms))

// 20 clients, then a subscriber that never sends PUBACK, then a publisher of 40 × 4 KiB at QoS 1
const clients: MqttClient[] = []
t.teardown(async () => await closeAll(...clients))
for (let i = 0; i < 20; i++) clients.push(await connect(node.mqttUrl, { clientId: `recon-${String(i).padStart(2, '0')}` }))
const slow = await RawClient.open(node.port)
t.teardown(() => slow.socket.destroy())
// no keep-alive: it sends nothing for the whole test
await slow.connect({ clientId: 'slow-reader', keepalive: 0 })
slow.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'load/#', qos: 1 }] })
await slow.next('suback')
const publisher = await connect(node.mqttUrl, { clientId: 'big-publisher' })
clients.push(publisher)
const payload = Buffer.alloc(4096, 'p')
for (let i = 0; i < 40; i++) await publisher.publishAsync('load/big', payload, { qos: 1 })
const ALL = [...Array.from({ length: 20 }, (_, i) => `recon-${String(i).padStart(2, '0')}`), 'slow-reader', 'big-publisher']

/** The top list once every client is counted (a client is listed from a moment after its CONNACK). */
async function topByRecv (): Promise<ClientLoadFacts[]> {
  for (let i = 0; ; i++) {
    const list = await json<ClientLoadFacts[]>('proc_count', 'recv_oct', '100')
    if (list.length >= ALL.length || i === 50) return list
    await settle(200)
  }
}

t.test('proc_count: after 20 clients connect the top lists name them, with the slow reader and the publisher on top', async (t) => {
  const byRecv = await topByRecv()
  t.same(byRecv.map((c) => c.client_id).sort(), ALL.slice().sort(), 'every connected client, by bytes received')
  t.equal(byRecv[0].client_id, 'big-publisher', 'the publisher sent the most')
  t.ok(byRecv[0].recv_oct > 40 * 4096, `${byRecv[0].recv_oct} bytes from it`)

  const inflight = await json<ClientLoadFacts[]>('proc_count', 'inflight_len')
  t.same(inflight.map((c) => c.client_id), ['slow-reader'], 'only the reader that never acknowledges has messages in flight')
  t.equal(inflight[0].inflight_len, 32, 'zone.external.max_inflight')
  const queued = await json<ClientLoadFacts[]>('proc_count', 'message_queue_len')
  t.equal(queued[0]?.client_id, 'slow-reader', 'EMQ X\'s attribute name works')
  t.equal(queued[0].mqueue_len, 8, 'the 8 that did not fit the window wait')
  const bySent = await json<ClientLoadFacts[]>('proc_count', 'send_oct', '3')
  t.equal(bySent.length, 3, 'N limits the list')
  t.equal(bySent[0].client_id, 'slow-reader', 'the reader got the most bytes')

  const text = await node.run('recon', 'proc_count', 'inflight_len')
  t.equal(text.code, 0)
  t.match(text.stdout, /^Client\(slow-reader, mqueue_len=8, inflight_len=32, awaiting_rel_len=0, heap_size=\d+, buffered=\d+, recv_oct=\d+, send_oct=\d+\)\n$/)
  const five = await node.run('recon', 'proc_count', 'recv_oct')
  t.equal(five.stdout.trim().split('\n').length, 5, 'recon.top = 5 when no N is given')
})

t.test('bin_leak: binary memory outside the heap and the clients holding the most message bytes', async (t) => {
  const data = await json<{ external: number, array_buffers: number, clients: ClientLoadFacts[] }>('bin_leak')
  t.ok(data.external > 0 && data.array_buffers > 0, `external ${data.external}, array buffers ${data.array_buffers}`)
  t.equal(data.clients[0]?.client_id, 'slow-reader')
  t.ok(data.clients[0].buffered >= 40 * 4096, `the reader holds ${data.clients[0].buffered} bytes of the 40 × 4 KiB messages`)
  const text = await node.run('recon', 'bin_leak')
  t.match(text.stdout, /^external +: \d+\narray_buffers : \d+\nclients holding the most message bytes:\nClient\(slow-reader, /)
})

t.test('memory and allocated: the process\'s memory and the V8 heap spaces, which add up to the heap in use', async (t) => {
  const memory = await json<Record<string, number>>('memory')
  t.ok(memory.heap_used > 1e6 && memory.heap_used <= memory.heap_total && memory.heap_total < memory.rss, `heap ${memory.heap_used} of ${memory.heap_total}, rss ${memory.rss}`)
  t.ok(memory.heap_limit > memory.heap_total && memory.usage > 0 && memory.usage <= 1)
  t.equal(memory.native_contexts, 1)
  const spaces = await json<Array<{ space: string, size: number, used: number }>>('allocated')
  t.ok(spaces.some((s) => s.space === 'old_space') && spaces.some((s) => s.space === 'new_space'))
  const used = spaces.reduce((sum, s) => sum + s.used, 0)
  t.ok(used > memory.heap_used / 2 && used < memory.heap_used * 2, `the spaces hold ${used} bytes, the heap ${memory.heap_used}`)
  const text = await node.run('recon', 'memory')
  t.match(text.stdout, /^rss +: \d+\nheap_total +: \d+\nheap_used +: \d+\n/)
  t.match((await node.run('recon', 'allocated')).stdout, /^old_space +: size=\d+, used=\d+, available=\d+, physical=\d+$/m)
})

t.test('port_types, event_loop, node_stats: handles by type, the loop\'s delay and business, samples over time', async (t) => {
  const types = await json<Array<{ type: string, count: number }>>('port_types')
  const sockets = types.find((p) => p.type === 'TCPSocketWrap')?.count ?? 0
  t.ok(sockets >= ALL.length, `${sockets} TCP sockets for ${ALL.length} clients`)
  t.ok((types.find((p) => p.type === 'TCPServerWrap')?.count ?? 0) >= 2, 'the MQTT and HTTP listeners')
  t.match((await node.run('recon', 'port_types')).stdout, new RegExp(`^TCPSocketWrap +: ${sockets}$`, 'm'))

  const loop = await json<{ since: number, utilization: number, delay: Record<string, number> }>('event_loop')
  t.ok(loop.since < Date.now() && loop.delay.samples > 0, `${loop.delay.samples} samples since the load`)
  t.ok(loop.delay.max_ms >= loop.delay.p99_ms && loop.delay.p99_ms >= loop.delay.p50_ms && loop.delay.p50_ms >= 0)
  t.ok(loop.utilization > 0 && loop.utilization <= 1)
  t.match((await node.run('recon', 'event_loop')).stdout, /^utilization +: [0-9.]+\nresolution_ms +: 10\n/m)

  // messages flow while node_stats samples
  let publishing = true
  const flow = (async () => { while (publishing) { await publisher.publishAsync('flow/x', 'x', { qos: 1 }); await settle(20) } })()
  const sampled = await node.json<Array<Record<string, number>>>('recon', 'node_stats', '3', '300')
  publishing = false
  await flow
  t.equal(sampled.code, 0)
  t.equal(sampled.data.length, 3)
  for (const s of sampled.data) t.match(s, { interval_ms: 300, connections: ALL.length })
  t.ok(sampled.data[0].at < sampled.data[1].at && sampled.data[1].at < sampled.data[2].at)
  t.ok(sampled.data.reduce((sum, s) => sum + s.messages_in, 0) > 0 && sampled.data.reduce((sum, s) => sum + s.bytes_in, 0) > 0, 'messages and bytes came in')
  const text = await node.run('recon', 'node_stats', '2', '100')
  t.match(text.stdout, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d interval_ms=100, connections=22, handles=\d+, memory_total=\d+, .*event_loop_delay_max_ms=[0-9.]+\n.*\n$/)
  t.equal((await node.run('recon', 'node_stats', '100', '1000')).code, 2, 'more than broker_ctl waits for: a usage error')
})

t.test('heapsnapshot: a 0600 file of JSON inside the data directory, after which the GC counts show the collections it made', async (t) => {
  const gcBefore = await json<{ total: { count: number }, by_kind: { major: { count: number } } }>('gc')
  const run = await node.run('recon', 'heapsnapshot', 'before-upgrade')
  t.equal(run.code, 0, run.stderr)
  t.comment(run.stdout.trim())
  const file = join(node.dataDir, 'before-upgrade.heapsnapshot')
  t.match(run.stdout, `heap snapshot written to ${file} (`)
  const info = await stat(file)
  t.equal(info.mode & 0o777, 0o600)
  const snapshot = JSON.parse(await readFile(file, 'utf8')) as { snapshot: { meta: { node_fields: string[] }, node_count: number }, nodes: number[] }
  t.ok(snapshot.snapshot.node_count > 1000 && snapshot.nodes.length === snapshot.snapshot.node_count * snapshot.snapshot.meta.node_fields.length, 'V8 heap snapshot JSON')

  const gcAfter = await json<typeof gcBefore>('gc')
  t.ok(gcAfter.by_kind.major.count > gcBefore.by_kind.major.count, `major collections ${gcBefore.by_kind.major.count} → ${gcAfter.by_kind.major.count}`)
  t.match((await node.run('recon', 'gc')).stdout, /^total +: count=\d+, pause_ms=[0-9.]+, max_pause_ms=[0-9.]+\nminor +: count=/m)
})

t.test('heapsnapshot refuses every path out of the data directory, a link, an existing file', async (t) => {
  const outside = join(tmpdir(), `recon-outside-${process.pid}`)
  await mkdir(outside, { recursive: true })
  t.teardown(async () => await rm(outside, { recursive: true, force: true }))
  await symlink(outside, join(node.dataDir, 'escape-link'))
  for (const [path, why] of [
    ['../escaped', /inside the data directory/],
    [join(outside, 'abs'), /inside the data directory/],
    ['escape-link/x', /symbolic link/],
    ['before-upgrade', /exists already/]
  ] as const) {
    const run = await node.run('recon', 'heapsnapshot', path)
    t.equal(run.code, 1, `${path}: refused`)
    t.match(run.stderr, why)
  }
  t.same(await readdir(outside), [], 'nothing written outside')
})

t.test('remote_load says what to do instead; bad arguments are usage errors', async (t) => {
  const remote = await node.run('recon', 'remote_load', 'broker_recon')
  t.equal(remote.code, 1)
  t.match(remote.stderr, /no Node\.js counterpart.*plugins reload <Plugin>/)
  for (const args of [['nonsense'], ['proc_count', 'reductions'], ['proc_count', 'recv_oct', '0']]) {
    const run = await node.run('recon', ...args)
    t.equal(run.code, 2, `recon ${args.join(' ')}: usage`)
    t.match(run.stderr, /recon heapsnapshot <File>/, 'the usage shown')
  }
})

t.test('GET /api/v3/nodes/:node/recon answers the same figures; an unknown node and bad parameters are refused', async (t) => {
  const { status, body } = await api('GET', `/nodes/${NODE}/recon?top=30`)
  t.equal(status, 200)
  const facts = body as ReconFacts
  t.equal(facts.node, NODE)
  t.same(facts.top.recv_oct.map((c) => c.client_id).sort(), ALL.slice().sort(), 'the 22 clients')
  t.same(facts.top.inflight_len.map((c) => [c.client_id, c.inflight_len]), [['slow-reader', 32]])
  t.same(facts.top.mqueue_len.map((c) => [c.client_id, c.mqueue_len]), [['slow-reader', 8]])
  t.same(facts.top.recv_oct.map((c) => c.client_id), (await json<ClientLoadFacts[]>('proc_count', 'recv_oct', '30')).map((c) => c.client_id), 'as broker_ctl lists them')
  t.equal(facts.bin_leak.clients[0].client_id, 'slow-reader')
  t.ok(facts.memory.heap_used > 0 && facts.allocated.length > 3 && facts.port_types.length > 0 && facts.event_loop.delay.samples > 0)
  t.ok(facts.gc.by_kind.major.count >= 2, 'the snapshots\' collections')
  t.equal(facts.node_stats, undefined, 'no sampling unless asked')
  const sampled = await api('GET', `/nodes/${NODE}/recon?top=1&samples=2&interval=100`)
  t.equal((sampled.body as ReconFacts).node_stats?.length, 2)
  t.equal((sampled.body as ReconFacts).top.recv_oct.length, 1)
  t.same(await api('GET', '/nodes/nobody@127.0.0.1/recon'), { status: 404, body: { message: 'node not found' } })
  t.same(await api('GET', `/nodes/${NODE}/recon?top=lots`), { status: 400, body: { code: 108, message: 'top must be a whole number' } })
  t.same(await api('GET', `/nodes/${NODE}/recon?samples=100`), { status: 400, body: { code: 108, message: 'the number of samples must be 1 to 60' } })
  t.same(await api('GET', `/nodes/${NODE}/recon?verbose=1`), { status: 400, body: { code: 108, message: 'unknown parameter verbose (top, samples, interval)' } })
})

t.test('unloaded through the API the command and the route are gone; loaded again they answer', async (t) => {
  t.same(await api('PUT', `/nodes/${NODE}/plugins/broker_recon/unload`), { status: 200, body: 'ok' })
  t.equal((await node.run('recon', 'memory')).code, 2, 'no recon command')
  t.equal((await api('GET', `/nodes/${NODE}/recon`)).status, 404)
  const loadedAfter = Date.now()
  t.same(await api('PUT', `/nodes/${NODE}/plugins/broker_recon/load`), { status: 200, body: 'ok' })
  t.equal((await node.run('recon', 'memory')).code, 0)
  const facts = (await api('GET', `/nodes/${NODE}/recon`)).body as ReconFacts
  t.ok(facts.gc.since >= loadedAfter && facts.event_loop.since >= loadedAfter, 'the GC and event-loop figures count from the new load')
})

t.test('a bad value in etc/plugins/broker_recon.conf is refused with file:line at load', async (t) => {
  t.same(await api('PUT', `/nodes/${NODE}/plugins/broker_recon/unload`), { status: 200, body: 'ok' })
  await writeFile(join(node.dataDir, 'etc', 'broker_recon.conf'), 'recon.top = 5\nrecon.heapsnapshot = sometimes\n')
  const load = await api('PUT', `/nodes/${NODE}/plugins/broker_recon/load`)
  t.equal(load.status, 500)
  t.match(load.body, { message: /broker_recon\.conf:2: recon\.heapsnapshot: \S+ is not a switch/ })
  t.equal((await node.run('recon', 'memory')).code, 2, 'not loaded')
})

