// The cluster bus (lib/cluster/bus.ts) on a real redis-server when a node is
// judged gone by silence, two buses in this process standing for two nodes.
// A node that lost its Redis connections and was slow to come back (what a
// Redis restart or a stalled process does) is judged gone by the other after
// 1 s without a word; what the other acknowledges meanwhile reaches it when
// it is heard again (the sender kept those frames for it). A node that never
// comes back (kill -9: no `bye`) does not hold the other's publishers, and
// what is kept for it stays within the bus's bound.
import { Redis } from 'ioredis'
import t from 'tap'
import { RedisBus } from '../lib/cluster/bus.js'
import { emitted } from './helpers/bus.js'
import { waitFor } from './helpers/cluster.js'
import { startRedis } from './helpers/servers/redis.js'

const redis = await startRedis()
t.teardown(async () => await redis.close())
const CHANNEL = 'absent:bus'
const WINDOW = 100
/** the bus keeps this many messages for nodes that have not said they have them (UNCONFIRMED_WINDOWS × window) */
const KEPT_BOUND = 4 * WINDOW

interface Node {
  bus: RedisBus
  pub: Redis
  sub: Redis
  /** while true its connections, once lost, come back only after AWAY_MS */
  away: boolean
}
const AWAY_MS = 3000

let nodes = 0

function node (): Node {
  const self: Partial<Node> & { away: boolean } = { away: false }
  const name = `absent-node-${++nodes}`
  const connect = (role: string): Redis => new Redis({ host: '127.0.0.1', port: redis.port, connectionName: `${name}-${role}`, retryStrategy: () => self.away ? AWAY_MS : 50 })
  self.pub = connect('pub')
  self.sub = connect('sub')
  self.bus = new RedisBus({ pub: self.pub, sub: self.sub, channel: CHANNEL, window: WINDOW, overflow: 'pause', concurrency: 10 })
  const bus = self.bus
  t.teardown(async () => await new Promise<void>((resolve) => bus.close(resolve)))
  return self as Node
}

/** A QoS 1 message on `topic` through `b`. */
const published = async (b: RedisBus, topic: string, payload: string): Promise<void> =>
  await emitted(b, { topic, qos: 1, payload: Buffer.from(payload), retain: false, cmd: 'publish' })

/** Listens on `topic` on `n`; the payloads it gets. */
async function listen (n: Node, topic: string): Promise<string[]> {
  const got: string[] = []
  await new Promise<void>((resolve) => n.bus.on(topic, (packet, cb) => { got.push(String(packet.payload)); cb() }, resolve))
  return got
}

/** Closes a node's connections from Redis' side (CLIENT KILL), as a restart of Redis or a lost link does. */
async function cut (admin: Redis, n: Node): Promise<void> {
  const names = new Set([n.pub, n.sub].map((conn) => conn.options.connectionName))
  const clients = String(await admin.client('LIST')).split('\n').map((line) => Object.fromEntries(line.split(' ').map((field) => field.split('='))) as Record<string, string>)
  for (const client of clients.filter((c) => names.has(c.name))) await admin.client('KILL', 'ID', client.id)
}

const admin = new Redis({ host: '127.0.0.1', port: redis.port })
t.teardown(() => admin.disconnect())
const sender = node()

/** A second node that hears `sender` and is heard by it. */
async function peer (topic: string): Promise<{ n: Node, got: string[] }> {
  const n = node()
  const got = await listen(n, topic)
  const others = sender.bus.state().nodes
  await waitFor(() => sender.bus.state().nodes > others && n.bus.state().nodes > 0, 20_000, 'the two nodes hear each other')
  return { n, got }
}

t.test('a node judged gone while it could not listen gets, once heard again, what the other acknowledged meanwhile', async (t) => {
  const { n: slow, got } = await peer('absent/#')
  slow.away = true
  await cut(admin, slow)
  await waitFor(() => slow.sub.status !== 'ready' && slow.pub.status !== 'ready', 10_000, 'the slow node disconnected')
  const sent = Array.from({ length: 50 }, (_, i) => `m${i}`)
  for (const payload of sent) await published(sender.bus, 'absent/x', payload)
  t.ok(slow.sub.status !== 'ready', 'every message acknowledged while the slow node could not listen (it was judged gone, not waited for)')
  slow.away = false
  await waitFor(() => sent.every((payload) => got.includes(payload)), 30_000, 'the messages on the node once it is back').catch(() => {})
  t.same(sent.filter((payload) => !got.includes(payload)), [], 'none lost')
  t.same(got.filter((payload) => payload !== 'warm'), sent, 'each once, in order')
  await waitFor(() => sender.bus.state().unconfirmed === 0, 20_000, 'its receipts').catch(() => {})
  t.equal(sender.bus.state().unconfirmed, 0, 'the sender lets go of them once the node says it has them')
  await new Promise<void>((resolve) => slow.bus.close(resolve))
})

t.test('a node that never comes back holds no publisher, and what is kept for it stays bounded', async (t) => {
  const { n: dead } = await peer('dead/#')
  // kill -9: its connections close, no `bye`, never back
  dead.pub.disconnect()
  dead.sub.disconnect()
  const total = 3 * KEPT_BOUND
  for (let i = 0; i < total; i++) await published(sender.bus, 'dead/x', `d${i}`)
  t.pass(`${total} messages acknowledged after the node died`)
  const { unconfirmed, behind } = sender.bus.state()
  t.ok(unconfirmed < KEPT_BOUND, `kept for it: ${unconfirmed} messages, under ${KEPT_BOUND}`)
  t.notOk(behind, 'publishers not held')
})
