// The cluster bus's receive side (lib/cluster/bus.ts) on a real redis-server,
// two buses in this process standing for two nodes: a backlog of frames (up
// to 512 messages each, several per Redis read) is handed to the node's
// listeners a bounded number per turn of the event loop, every message once,
// in the order sent, whole; what waits counts in the node's queue. An engine
// PUBLISH crosses in the bus's own binary form, anything else in msgpack, and
// both come back as msgpack gave them.
import { Redis } from 'ioredis'
import t from 'tap'
import { createRequire } from 'node:module'
import { RedisBus } from '../lib/cluster/bus.js'
import { decodeFrame, decodeMessage, encodeFrame, encodeMessage, FrameBuilder } from '../lib/cluster/bus-frame.js'
import { emitted } from './helpers/bus.js'
import { waitFor } from './helpers/cluster.js'
import { startRedis } from './helpers/servers/redis.js'

const redis = await startRedis()
t.teardown(async () => await redis.close())

function bus (window: number): RedisBus {
  const connect = (): Redis => new Redis({ host: '127.0.0.1', port: redis.port, lazyConnect: false })
  const b = new RedisBus({ pub: connect(), sub: connect(), channel: 'budget:bus', window, overflow: 'pause', concurrency: 100 })
  t.teardown(async () => await new Promise<void>((resolve) => b.close(resolve)))
  return b
}

// a window wide enough that the sender never waits: the whole backlog arrives at once
const sender = bus(100_000)
const receiver = bus(100_000)

t.test('a backlog of thousands of messages is delivered over many turns, each once, in order, whole', async (t) => {
  const got: Buffer[] = []
  let inTurn = 0
  let mostInTurn = 0
  let turns = 0
  let queuedSeen = 0
  const listener = (packet: { topic: string, payload?: unknown }, cb: () => void): void => {
    if (inTurn++ === 0) {
      setImmediate(() => {
        mostInTurn = Math.max(mostInTurn, inTurn)
        inTurn = 0
        turns++
      })
    }
    queuedSeen = Math.max(queuedSeen, receiver.state().queued)
    got.push(packet.payload as Buffer)
    cb()
  }
  await new Promise<void>((resolve) => receiver.on('backlog/#', listener, resolve))
  await new Promise<void>((resolve) => sender.on('warm/up', () => {}, resolve))
  await waitFor(() => sender.state().nodes === 1 && receiver.state().nodes === 1, 10_000, 'each bus hears the other')
  // small and large messages: several frames of 512, and frames cut at 256 KiB
  const payloads = Array.from({ length: 6000 }, (_, i) => {
    const buf = Buffer.alloc(i % 100 === 0 ? 20_000 : 8 + (i % 50), i % 251)
    buf.writeUInt32BE(i, 0)
    return buf
  })
  await Promise.all(payloads.map(async (payload, i) => await emitted(sender, { topic: 'backlog/x', qos: (i % 2) as 0 | 1, payload })))
  await waitFor(() => got.length >= payloads.length, 30_000, 'every message on the receiving node')
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(got.length, payloads.length, 'each once')
  t.same(got.map((buf) => buf.readUInt32BE(0)), payloads.map((_, i) => i), 'in the order sent')
  t.ok(got.every((buf, i) => buf.equals(payloads[i])), 'whole')
  t.ok(mostInTurn <= 256, `at most 256 delivered in one turn (most: ${mostInTurn}, over ${turns} turns)`)
  t.ok(queuedSeen > 256, `what waits for a later turn counts in the queue (up to ${queuedSeen})`)
  receiver.removeListener('backlog/#', listener)
})

t.test('bus messages: an engine PUBLISH in the own form, anything else in msgpack, both decoded as msgpack had them', async (t) => {
  const msgpack = createRequire(import.meta.url)('msgpack-lite') as { encode: (v: unknown) => Buffer, decode: (b: Buffer) => unknown }
  const engine = (fields: Record<string, unknown>): Record<string, unknown> =>
    ({ cmd: 'publish', brokerId: 'b-1', brokerCounter: 7, topic: 'a/b', payload: Buffer.from('x'), qos: 0, retain: false, dup: false, ...fields })
  const own = [
    engine({}),
    engine({ qos: 1, messageId: undefined }),
    engine({ qos: 2, messageId: 65535, retain: true, dup: true }),
    engine({ topic: 'ü/€/𝄞', brokerId: 'ноде', payload: Buffer.alloc(0), brokerCounter: 2 ** 40 + 3 }),
    engine({ topic: '', payload: Buffer.alloc(70_000, 1) }),
    // what the engine hands the bus for every client's PUBLISH (it sets clientId)
    engine({ clientId: 'c' }),
    engine({ qos: 1, messageId: 12, clientId: 'ü-€', payload: Buffer.alloc(0) }),
    engine({ clientId: '' })
  ]
  for (const packet of own) {
    const encoded = encodeMessage(packet)
    t.equal(encoded[0], 0xc1, `own form: ${packet.topic as string} qos ${packet.qos as number}`)
    t.ok(encoded.length < msgpack.encode(packet).length, 'smaller than msgpack')
    t.same(decodeMessage(encoded), msgpack.decode(msgpack.encode(packet)), 'decoded as msgpack had it')
  }
  const others = [
    engine({ properties: { userProperties: { a: '1' } } }),
    engine({ payload: 'a string' }),
    engine({ clientId: 7 }),
    engine({ cmd: 'pubrel' }),
    engine({ qos: 3 }),
    engine({ messageId: 70_000 }),
    engine({ brokerCounter: 1.5 }),
    { topic: 'x/y', qos: 1, payload: Buffer.from('z') }
  ]
  for (const packet of others) {
    const encoded = encodeMessage(packet)
    t.not(encoded[0], 0xc1, `msgpack: ${JSON.stringify(Object.keys(packet))}`)
    t.same(decodeMessage(encoded), msgpack.decode(msgpack.encode(packet)), 'round trip')
  }
  const cut = encodeMessage(engine({ topic: 'a/long/topic' })).subarray(0, 20)
  t.throws(() => decodeMessage(cut), 'a cut own-form message is refused (the bus skips it)')
  const withClient = encodeMessage(engine({ topic: 'a/b', clientId: 'a-client-id' }))
  t.throws(() => decodeMessage(withClient.subarray(0, 16 + 3 + 3 + 1)), 'a message cut inside its clientId length is refused')
  t.throws(() => decodeMessage(withClient.subarray(0, 16 + 3 + 3 + 2 + 5)), 'a message cut inside its clientId is refused')

  // the sender writes messages straight into the frame: the same bytes as each encoded on its own, then framed
  const builder = new FrameBuilder()
  const sender = Buffer.from('0123456789abcdef', 'hex')
  const mixed = [...own, ...others, ...own]
  for (const round of [1, 2]) {
    for (const packet of mixed) builder.add(packet)
    t.equal(builder.count, mixed.length, `round ${round}: every message counted`)
    const framed = builder.finish('messages', sender, round)
    t.ok(framed.equals(encodeFrame('messages', sender, round, mixed.map(encodeMessage))), `round ${round}: the frame as encodeFrame makes it (past the 64 KiB start buffer)`)
    t.same(decodeFrame(framed)?.messages.map(decodeMessage), mixed.map((p) => msgpack.decode(msgpack.encode(p))), `round ${round}: every message decodes`)
    t.equal(builder.count, 0, 'the builder is empty after finish')
    t.equal(builder.bytes, 0, 'and holds no bytes')
  }
})
