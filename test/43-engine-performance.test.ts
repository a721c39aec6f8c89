// Engine costs a user notices: one SUBSCRIBE with 10 000 filters in a
// persistent session (answered in seconds, memory bounded, restored after a
// restart, removed by one UNSUBSCRIBE, its retained messages read in one
// store scan), `zone.external.max_subscriptions`
// applied within one SUBSCRIBE, an MQTT 5 subscriber with topic aliases
// and a Maximum Packet Size getting each message serialized once, and a
// flood of QoS 0 messages that no longer overflows the stack (the mqemitter
// patch).
import { readFileSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import t from 'tap'
import mqttPacket, { type ISubackPacket, type ISubscribePacket, type Packet } from 'mqtt-packet'
import { spawnBroker, startBroker, tempDir, type BrokerProcess } from './helpers/broker.js'
import { closeAll, connect, nextMessages, waitEvent, type MqttClient } from './helpers/mqtt.js'
import { RawClient } from './helpers/raw-client.js'

const FILTERS = 10_000
/** Generous on a loaded 2-core machine; the quadratic engine took 38 s for 1000 filters. */
const DEADLINE_MS = 90_000
const MIB = 1024 * 1024

function rssBytes (pid: number): number {
  const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return Number(match?.[1] ?? NaN) * 1024
}

async function within<T> (ms: number, what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms / 1000} s`)), ms) })
  try {
    return await Promise.race([work, late])
  } finally {
    clearTimeout(timer)
  }
}

const filterOf = (i: number): string => `fleet/${i}/+/state`

t.test('one persistent SUBSCRIBE with 10 000 filters: SUBACK, memory, restart, UNSUBSCRIBE', async (t) => {
  const dataDir = await tempDir()
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  let broker: BrokerProcess = await spawnBroker(dataDir)
  t.teardown(() => { broker.child.kill('SIGKILL') })
  const url = (): string => `mqtt://127.0.0.1:${broker.port}`
  const session = { clientId: 'fleet-watcher', clean: false, protocolVersion: 4 as const }

  const retainer = await connect(url(), { clientId: 'fleet-retainer' })
  for (const topic of ['fleet/0/engine/state', `fleet/${FILTERS - 1}/engine/state`, 'fleet/x/engine/status']) {
    await retainer.publishAsync(topic, `retained ${topic}`, { qos: 1, retain: true })
  }
  await retainer.endAsync()

  let watcher = await connect(url(), session)
  const before = rssBytes(broker.child.pid!)
  const filters = Object.fromEntries(Array.from({ length: FILTERS }, (_, i) => [filterOf(i), { qos: 1 as const }]))
  const retained = nextMessages(watcher, 2, DEADLINE_MS)
  const granted = await within(DEADLINE_MS, 'SUBSCRIBE', watcher.subscribeAsync(filters))
  t.equal(granted.length, FILTERS, 'a SUBACK with one code per filter')
  t.ok(granted.every((g) => g.qos === 1), 'every filter granted QoS 1')
  const grown = rssBytes(broker.child.pid!) - before
  t.ok(grown < 600 * MIB, `the broker grew by ${Math.round(grown / MIB)} MiB (under 600 MiB)`)
  t.same((await retained).map((m) => m.topic).sort(), ['fleet/0/engine/state', `fleet/${FILTERS - 1}/engine/state`], 'the retained messages its filters match, once each')
  await watcher.endAsync()

  broker.child.kill('SIGTERM')
  await broker.exited
  broker = await spawnBroker(dataDir, {}, broker.port)
  watcher = await within(DEADLINE_MS, 'resume', connect(url(), session))
  t.teardown(() => closeAll(watcher))
  const publisher = await connect(url(), { clientId: 'fleet-pub' })
  t.teardown(() => closeAll(publisher))
  const delivered = nextMessages(watcher, 2, DEADLINE_MS)
  await publisher.publishAsync('fleet/0/engine/state', 'first', { qos: 1 })
  await publisher.publishAsync(`fleet/${FILTERS - 1}/engine/state`, 'last', { qos: 1 })
  t.same((await delivered).map((m) => m.payload), ['first', 'last'], 'the restored session has its first and last filter')

  await within(DEADLINE_MS, 'UNSUBSCRIBE', watcher.unsubscribeAsync(Object.keys(filters)))
  await watcher.subscribeAsync('fleet/marker', { qos: 1 })
  const next = nextMessages(watcher, 1, DEADLINE_MS)
  await publisher.publishAsync(`fleet/${FILTERS - 1}/engine/state`, 'after unsubscribe', { qos: 1 })
  await publisher.publishAsync('fleet/marker', 'marker', { qos: 1 })
  t.same((await next).map((m) => m.payload), ['marker'], 'nothing arrives on the unsubscribed filters')
})

for (const protocolVersion of [5, 4] as const) {
  const refused = protocolVersion === 5 ? 0x97 : 0x80
  t.test(`max_subscriptions 5, one SUBSCRIBE with 20 filters (MQTT ${protocolVersion === 5 ? '5' : '3.1.1'}): 5 granted, the rest ${refused}`, async (t) => {
    const broker = await startBroker({ 'zone.external.max_subscriptions': 5 })
    t.teardown(broker.stop)
    const client = await RawClient.open(broker.port(), protocolVersion)
    t.teardown(() => client.end())
    // a persistent session: its filters are stored, so each one's grant completes later
    await client.connect({ clientId: `quota-${protocolVersion}`, clean: false, ...(protocolVersion === 5 ? { properties: { sessionExpiryInterval: 300 } } : {}) })
    const subscribe = async (messageId: number, topics: string[]): Promise<number[]> => {
      client.send({ cmd: 'subscribe', messageId, subscriptions: topics.map((topic) => ({ topic, qos: 1 })) } as ISubscribePacket)
      return ((await client.next('suback')) as ISubackPacket).granted as number[]
    }
    const twenty = Array.from({ length: 20 }, (_, i) => `quota/${i}`)
    t.same(await subscribe(1, twenty), [...Array(5).fill(1), ...Array(15).fill(refused)], 'the first five in packet order')
    t.same(await subscribe(2, ['quota/0', 'quota/new']), [1, refused], 'a held filter again is granted, a new one is not')
  })
}

t.test('MQTT 5 subscribers with topic aliases and a Maximum Packet Size: each message serialized once', async (t) => {
  const broker = await startBroker()
  t.teardown(broker.stop)
  const url = `mqtt://127.0.0.1:${broker.port()}`
  const SUBSCRIBERS = 10
  const MESSAGES = 50
  const subscribers: MqttClient[] = []
  t.teardown(() => closeAll(...subscribers))
  for (let i = 0; i < SUBSCRIBERS; i++) {
    const sub = await connect(url, { clientId: `alias-${i}`, protocolVersion: 5, properties: { topicAliasMaximum: 10, maximumPacketSize: 4096 } })
    await sub.subscribeAsync('alias/topic', { qos: 0 })
    subscribers.push(sub)
  }
  const publisher = await connect(url, { clientId: 'alias-pub', protocolVersion: 5 })
  t.teardown(() => closeAll(publisher))

  // the broker's and the clients' mqtt-packet are one module: count the broker's aliased PUBLISH encodings
  let encodings = 0
  const aliased = (packet: Packet): boolean => packet.cmd === 'publish' && packet.properties?.topicAlias !== undefined
  const { generate, writeToStream } = mqttPacket
  mqttPacket.generate = (packet, options) => { if (aliased(packet)) encodings++; return generate(packet, options) }
  mqttPacket.writeToStream = Object.assign((packet: Packet, stream: NodeJS.WritableStream, options?: object) => {
    if (aliased(packet)) encodings++
    return writeToStream(packet, stream, options)
  }, { cacheNumbers: writeToStream.cacheNumbers })
  t.teardown(() => { Object.assign(mqttPacket, { generate, writeToStream }) })

  const received = subscribers.map(async (sub) => await nextMessages(sub, MESSAGES, 30_000))
  const big = waitEvent(broker.node.engine, 'messageDropped', 30_000)
  for (let i = 0; i < MESSAGES; i++) await publisher.publishAsync('alias/topic', `m${i}`, { qos: 0 })
  await publisher.publishAsync('alias/topic', Buffer.alloc(5000), { qos: 0 })
  const all = await Promise.all(received)
  for (const messages of all) {
    t.same(messages.map((m) => m.topic + ' ' + m.payload), Array.from({ length: MESSAGES }, (_, i) => `alias/topic m${i}`))
  }
  await big
  t.ok(all.every((messages) => messages.slice(1).every((m) => m.properties?.topicAlias === 1)), 'later messages carry alias 1 only')
  t.ok(encodings <= 2 * MESSAGES + 1, `${encodings} encodings for ${SUBSCRIBERS * MESSAGES} deliveries of ${MESSAGES} messages`)
})

t.test('a flood of QoS 0 messages: the message bus takes its queue in a loop, not a call per message (mqemitter patch)', async (t) => {
  const broker = await startBroker()
  t.teardown(broker.stop)
  const url = `mqtt://127.0.0.1:${broker.port()}`
  const sub = await connect(url, { clientId: 'flood-sub' })
  await sub.subscribeAsync('flood/#', { qos: 0 })
  let received = 0
  sub.on('message', () => { received++ })
  const publishers = await Promise.all(Array.from({ length: 8 }, async (_, i) => await connect(url, { clientId: `flood-pub-${i}` })))
  t.teardown(async () => await closeAll(sub, ...publishers))
  // unpatched, the bus's queue (over its 100 messages in flight) was emptied by nested calls: a RangeError
  // (Maximum call stack size exceeded) took the node down within a second of this
  const end = Date.now() + 3000
  await Promise.all(publishers.map(async (client, i) => {
    while (Date.now() < end) {
      for (let n = 0; n < 500; n++) client.publish(`flood/${i}`, 'aaaaaaaaaaaaaaaa', { qos: 0 })
      await new Promise((resolve) => setImmediate(resolve))
    }
  }))
  const after = await connect(url, { clientId: 'after-flood' })
  t.teardown(async () => await closeAll(after))
  const probe = new Promise((resolve) => sub.on('message', (topic) => { if (topic === 'flood/probe') resolve(topic) }))
  await after.publishAsync('flood/probe', 'still here', { qos: 1 })
  t.equal(await probe, 'flood/probe', 'the node still routes')
  t.ok(received > 0, `the subscriber got messages (${received})`)
})
