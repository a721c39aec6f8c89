// The cluster bus (lib/cluster/bus.ts) on a real redis-server, two buses in
// this process standing for two nodes: messages cross in batched frames, a
// node whose subscribers are slow holds the other node's publishers' acknowledgements
// (the engine reads no more from them) and lets them go when it catches up,
// drop_qos0 keeps QoS 0 off the bus while behind and counts it, and
// anything else written to the channel is ignored.
import { Redis } from 'ioredis'
import t from 'tap'
import { RedisBus, type BusOverflow } from '../lib/cluster/bus.js'
import { emitted } from './helpers/bus.js'
import { waitFor } from './helpers/cluster.js'
import { startRedis } from './helpers/servers/redis.js'

const redis = await startRedis()
t.teardown(async () => await redis.close())
let buses = 0
const CHANNEL = 'bustest:bus'
const WINDOW = 100

function bus (overflow: BusOverflow = 'pause'): RedisBus {
  const connect = (): Redis => new Redis({ host: '127.0.0.1', port: redis.port, lazyConnect: false })
  const b = new RedisBus({ pub: connect(), sub: connect(), channel: CHANNEL, window: WINDOW, overflow, concurrency: 10 })
  buses++
  t.teardown(async () => await new Promise<void>((resolve) => b.close(resolve)))
  return b
}


const a = bus()
const b = bus()
// each bus hears the other before the tests (hello every 250 ms)
await new Promise<void>((resolve) => a.on('warm/up', () => {}, resolve))
await new Promise<void>((resolve) => b.on('warm/up', () => {}, resolve))
await new Promise((resolve) => setTimeout(resolve, 600))

t.test('messages published on one node reach the other, in order, many per PUBLISH', async (t) => {
  const got: string[] = []
  const listener = (packet: { topic: string, payload?: unknown }, cb: () => void): void => { got.push(String(packet.payload)); cb() }
  await new Promise<void>((resolve) => b.on('cross/#', listener, resolve))
  const monitor = new Redis({ host: '127.0.0.1', port: redis.port })
  t.teardown(() => monitor.disconnect())
  const before = Number(/total_commands_processed:(\d+)/.exec(await monitor.info('stats'))?.[1])
  const sent = Array.from({ length: 1000 }, (_, i) => `m${i}`)
  await Promise.all(sent.map(async (payload) => await emitted(a, { topic: 'cross/x', qos: 1, payload: Buffer.from(payload) })))
  await waitFor(() => got.length === sent.length, 20_000, 'every message on the other node')
  t.same(got, sent, 'all, in order, once')
  const commands = Number(/total_commands_processed:(\d+)/.exec(await monitor.info('stats'))?.[1]) - before
  t.ok(commands < 100, `far fewer Redis commands than messages (${commands} for ${sent.length}, hellos and INFO included)`)
  b.removeListener('cross/#', listener)
})

t.test('a node with slow subscribers holds the publishers of the other, then lets them go', async (t) => {
  const pending: Array<() => void> = []
  let delivered = 0
  const slow = (_packet: unknown, cb: () => void): void => { pending.push(() => { delivered++; cb() }) }
  await new Promise<void>((resolve) => b.on('slow/#', slow, resolve))
  let acked = 0
  const total = 20 * WINDOW
  const all = Promise.all(Array.from({ length: total }, async (_, i) => {
    await emitted(a, { topic: 'slow/x', qos: 1, payload: Buffer.from(String(i)) })
    acked++
  }))
  await waitFor(() => b.state().behind, 10_000, 'the receiving node behind')
  await waitFor(() => a.state().behind, 10_000, 'the publishing node sees it')
  // nothing is being delivered: what the publisher had acknowledged stays put
  const ackedWhileHeld = acked
  await new Promise((resolve) => setTimeout(resolve, 500))
  t.equal(acked, ackedWhileHeld, 'no acknowledgement while the other node is behind')
  t.ok(acked < total, `publishers held (${acked} of ${total} acknowledged)`)
  // the subscriber catches up
  const drain = setInterval(() => { for (const run of pending.splice(0)) run() }, 5)
  t.teardown(() => clearInterval(drain))
  await all
  await waitFor(() => delivered === total, 20_000, 'every message delivered')
  t.equal(acked, total, 'every publisher acknowledged once the bus caught up')
  t.equal(delivered, total, 'nothing dropped under pause')
  clearInterval(drain)
  b.removeListener('slow/#', slow)
})

t.test('drop_qos0: QoS 0 kept off the bus while behind, counted; QoS 1 still waits', async (t) => {
  const c = bus('drop_qos0')
  await new Promise<void>((resolve) => c.on('warm/up', () => {}, resolve))
  const pending: Array<() => void> = []
  let delivered = 0
  const slow = (_packet: unknown, cb: () => void): void => { pending.push(() => { delivered++; cb() }) }
  await new Promise<void>((resolve) => b.on('drop/#', slow, resolve))
  await new Promise((resolve) => setTimeout(resolve, 600))
  let drops = 0
  c.onDrop = () => { drops++ }
  // QoS 1 until the other node is behind: those wait
  const held = Promise.all(Array.from({ length: 20 * WINDOW }, async () => await emitted(c, { topic: 'drop/x', qos: 1, payload: Buffer.from('q1') })))
  await waitFor(() => b.state().behind && c.state().behind, 10_000, 'the other node behind, and the publishing node sees it')
  await Promise.all(Array.from({ length: 50 }, async () => await emitted(c, { topic: 'drop/x', qos: 0, payload: Buffer.from('q0') })))
  t.equal(drops, 50, 'QoS 0 met while behind dropped and counted, its publishers not held')
  t.equal(c.state().dropped, drops)
  let q1 = false
  const qos1 = emitted(c, { topic: 'drop/x', qos: 1, payload: Buffer.from('q1') }).then(() => { q1 = true })
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.notOk(q1, 'a QoS 1 message waits')
  const drain = setInterval(() => { for (const run of pending.splice(0)) run() }, 5)
  t.teardown(() => clearInterval(drain))
  await Promise.all([held, qos1])
  t.ok(q1, 'and goes once the bus caught up')
  await waitFor(() => delivered === 20 * WINDOW + 1, 20_000, 'every QoS 1 message delivered on the other node')
  clearInterval(drain)
  b.removeListener('drop/#', slow)
})

t.test('anything else on the channel is ignored', async (t) => {
  const got: unknown[] = []
  const listener = (packet: unknown, cb: () => void): void => { got.push(packet); cb() }
  await new Promise<void>((resolve) => b.on('#', listener, resolve))
  const writer = new Redis({ host: '127.0.0.1', port: redis.port })
  t.teardown(() => writer.disconnect())
  for (const junk of [Buffer.from('hello'), Buffer.alloc(18), Buffer.from([1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 3, 0xc1])]) {
    await writer.publish(CHANNEL, junk)
  }
  await emitted(a, { topic: 'after/junk', qos: 1, payload: Buffer.from('ok') })
  await waitFor(() => got.length > 0, 10_000, `the real message after the junk (a: ${JSON.stringify(a.state())}, b: ${JSON.stringify(b.state())})`)
  t.same(got.map((p) => (p as { topic: string }).topic), ['after/junk'], 'only the real message; the bus still runs')
  t.equal(buses, 3)
})
