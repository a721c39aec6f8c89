// [MQTT-3.2.0-1] The first packet a client receives is the CONNACK, also when
// it resumes a session whose subscriptions match messages flowing at that
// moment: the engine restores the subscriptions before it writes the CONNACK,
// and a message matched in between used to be written first. MQTT.js then
// stored its PUBACK for a QoS 1 one "offline", stopped reading, and never saw
// the CONNACK (a connack timeout; the cluster's node-loss test hit it when a
// moved session reconnected under load). Engine patch 202. What waits for the
// CONNACK must not hold anyone else's messages, however long the connect takes.
import type { Packet } from 'mqtt-packet'
import t from 'tap'
import mqtt from 'mqtt'
import { startBroker } from './helpers/broker.js'
import { closeAll, connect, nextMessages, type MqttClient } from './helpers/mqtt.js'
import { RawClient } from './helpers/raw-client.js'

const RECONNECTS = 30
const FILTER = 'cf/#'

const broker = await startBroker()
t.teardown(broker.stop)
const url = `mqtt://127.0.0.1:${broker.port()}`

/** Publishes QoS 0 and QoS 1 messages on cf/<n> without pause until stopped. */
async function flood (): Promise<{ stop: () => Promise<number> }> {
  const publisher = await connect(url, { clientId: 'cf-publisher' })
  let running = true
  let sent = 0
  const loop = (async () => {
    while (running) {
      // ten in flight at a time, QoS 0 and QoS 1
      await Promise.all(Array.from({ length: 10 }, async (_, i) => await publisher.publishAsync(`cf/${i % 4}`, `m${sent + i}`, { qos: (i % 2) as 0 | 1 })))
      sent += 10
    }
  })()
  return {
    stop: async () => {
      running = false
      await loop
      await closeAll(publisher)
      return sent
    }
  }
}

/** The first packet the broker sends after a CONNECT on a raw socket (the socket is then closed). */
async function firstPacket (version: 4 | 5, clientId: string): Promise<Packet> {
  const raw = await RawClient.open(broker.port(), version)
  try {
    raw.send({
      cmd: 'connect',
      protocolId: 'MQTT',
      protocolVersion: version,
      clientId,
      clean: false,
      keepalive: 60,
      // a will makes the engine store it between restoring the subscriptions and the CONNACK
      will: { topic: 'cf-will', payload: Buffer.from('gone'), qos: 0, retain: false },
      ...(version === 5 ? { properties: { sessionExpiryInterval: 600 } } : {})
    })
    return await raw.next(['connack', 'publish'], 30_000)
  } finally {
    raw.end()
  }
}

for (const version of [4, 5] as const) {
  t.test(`MQTT ${version === 5 ? '5' : '3.1.1'}: a resumed session's CONNACK comes before the messages its subscriptions match`, async (t) => {
    const clientId = `cf-session-v${version}`
    const first = await connect(url, { clientId, protocolVersion: version, clean: false, properties: version === 5 ? { sessionExpiryInterval: 600 } : undefined })
    await first.subscribeAsync(FILTER, { qos: 1 })
    await closeAll(first)
    const load = await flood()
    const firsts: string[] = []
    for (let i = 0; i < RECONNECTS; i++) firsts.push((await firstPacket(version, clientId)).cmd)
    const sent = await load.stop()
    t.ok(sent > 0, `messages flowed meanwhile (${sent})`)
    t.same(firsts.filter((cmd) => cmd !== 'connack').slice(0, 5), [], `each of ${RECONNECTS} resumptions got its CONNACK first`)
  })
}

t.test('MQTT.js resuming a persistent session under a flood: the CONNACK first, then its messages', async (t) => {
  const clientId = 'cf-mqttjs'
  const will = { topic: 'cf-will', payload: Buffer.from('gone'), qos: 0 as const, retain: false }
  const options = { clientId, protocolVersion: 5 as const, clean: false, properties: { sessionExpiryInterval: 600 }, connectTimeout: 10_000, reconnectPeriod: 0, will }
  const first = await connect(url, options)
  await first.subscribeAsync(FILTER, { qos: 1 })
  await closeAll(first)
  const load = await flood()
  const clients: MqttClient[] = []
  t.teardown(async () => await closeAll(...clients))
  const early: string[] = []
  for (let i = 0; i < 20; i++) {
    const client = mqtt.connect(url, options)
    clients.push(client)
    let firstCmd: string | undefined
    client.on('packetreceive', (packet) => { firstCmd ??= packet.cmd })
    await new Promise<void>((resolve, reject) => {
      client.once('connect', () => resolve())
      client.once('error', reject)
    })
    if (firstCmd !== 'connack') early.push(`resumption ${i + 1}: ${String(firstCmd)}`)
    await nextMessages(client, 5, 20_000)
    await closeAll(client)
  }
  await load.stop()
  t.same(early, [], 'each of 20 resumptions received its CONNACK before any message, then messages')
})

t.test('a resumption waiting on a slow store holds up no other client, and still gets its CONNACK first', async (t) => {
  const clientId = 'cf-slow'
  const first = await connect(url, { clientId, clean: false })
  await first.subscribeAsync(FILTER, { qos: 1 })
  await closeAll(first)
  const watcher = await connect(url, { clientId: 'cf-watcher' })
  t.teardown(async () => await closeAll(watcher))
  await watcher.subscribeAsync(FILTER, { qos: 0 })
  let seen = 0
  watcher.on('message', () => { seen++ })
  // the will's store write of this one client takes 3 s (the connect waits for it before its CONNACK)
  const persistence = (broker.node.engine as unknown as { persistence: { putWill: (client: { id: string }, will: unknown) => Promise<unknown> } }).persistence
  const putWill = persistence.putWill.bind(persistence)
  let slowed = 0
  persistence.putWill = async (client, will) => {
    if (client.id === clientId) {
      slowed++
      await new Promise((resolve) => setTimeout(resolve, 3000))
    }
    return await putWill(client, will)
  }
  t.teardown(() => { persistence.putWill = putWill })
  const load = await flood()
  const started = Date.now()
  const pending = firstPacket(4, clientId)
  await new Promise((resolve) => setTimeout(resolve, 500))
  const seenBefore = seen
  await new Promise((resolve) => setTimeout(resolve, 2000))
  const flowed = seen - seenBefore
  const firstCmd = (await pending).cmd
  const waited = Date.now() - started
  await load.stop()
  t.equal(slowed, 1, 'the resumption\'s will write was the slow one')
  t.ok(waited >= 2500, `the resumption waited for it (${waited} ms)`)
  t.ok(flowed > 100, `meanwhile another subscriber kept receiving (${flowed} messages in 2 s)`)
  t.equal(firstCmd, 'connack', 'the resumption\'s first packet is still its CONNACK')
})
