// The engine's read budget (engine patch 203 read-budget): a socket is read
// at most 16 KiB at a time and all sockets together at most 64 KiB per turn of
// the event loop, the rest in later turns. Nothing read so may be lost,
// reordered or left unread: messages larger than the budget, a publisher one
// of whose subscribers does not read, a publisher that trickles then floods,
// packets sent behind a CONNECT (the client is paused while it is
// authenticated) and many publishers at once.
import t, { type Test } from 'tap'
import mqttPacket from 'mqtt-packet'
import { startBroker, type TestBroker } from './helpers/broker.js'
import { closeAll, connect, type MqttClient } from './helpers/mqtt.js'
import { RawClient } from './helpers/raw-client.js'

const DEADLINE_MS = 30_000

let b: TestBroker
t.before(async () => { b = await startBroker({ 'broker.sys_interval': '1h' }) })
t.teardown(async () => { await b.stop() })

const url = (): string => `mqtt://127.0.0.1:${b.port()}`

/** Payloads received on `client`, per topic, once `count` have come (rejects at the deadline with what came). */
async function collect (client: MqttClient, count: number): Promise<Map<string, Buffer[]>> {
  const byTopic = new Map<string, Buffer[]>()
  let got = 0
  return await new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      client.removeListener('message', onMessage)
      reject(new Error(`timed out with ${got}/${count} messages`))
    }, DEADLINE_MS)
    function onMessage (topic: string, payload: Buffer): void {
      const list = byTopic.get(topic) ?? []
      list.push(payload)
      byTopic.set(topic, list)
      if (++got === count) {
        clearTimeout(timer)
        client.removeListener('message', onMessage)
        resolve(byTopic)
      }
    }
    client.on('message', onMessage)
  })
}

/** A payload of `size` bytes that says its number and is checkable byte by byte. */
function payload (index: number, size: number): Buffer {
  const buf = Buffer.alloc(size, index % 251)
  buf.writeUInt32BE(index, 0)
  return buf
}

function samePayloads (t: Test, got: Buffer[] | undefined, sizes: number[], what: string): void {
  t.equal(got?.length, sizes.length, `${what}: every message`)
  const wrong = sizes.findIndex((size, i) => got?.[i]?.equals(payload(i, size)) !== true)
  t.equal(wrong, -1, `${what}: each whole, in order`)
}

async function subscriber (t: Test, filter: string): Promise<MqttClient> {
  const c = await connect(url(), { clientId: `sub-${Math.random()}` })
  t.teardown(() => closeAll(c))
  await c.subscribeAsync(filter, { qos: 0 })
  return c
}

t.test('a publisher is read on while one of its QoS 0 PUBLISHes waits for a subscriber that does not read', async (t) => {
  const sleeper = await connect(url(), { clientId: 'sleeper' })
  t.teardown(() => closeAll(sleeper))
  await sleeper.subscribeAsync('big/#', { qos: 0 })
  sleeper.stream.pause()
  const reader = await subscriber(t, 'big/#')
  const sizes = Array.from({ length: 24 }, () => 512 * 1024)
  const got = collect(reader, sizes.length)
  const pub = await connect(url(), { clientId: 'flooder' })
  t.teardown(() => closeAll(pub))
  sizes.forEach((size, i) => pub.publish('big/x', payload(i, size), { qos: 0 }))
  samePayloads(t, (await got).get('big/x'), sizes, 'the subscriber that reads')
})

t.test('large and small messages from many publishers at once, QoS 0 and 1', async (t) => {
  const reader = await subscriber(t, 'many/#')
  const publishers = 12
  const perPublisher = 40
  // from 2 bytes to 100 KiB, in a different order per publisher
  const sizesOf = (p: number): number[] => Array.from({ length: perPublisher }, (_, i) => [4, 700, 17_000, 100 * 1024, 2 * 1024, 65_536][(i + p) % 6])
  const got = collect(reader, publishers * perPublisher)
  // MQTT orders a client's messages per QoS: a QoS 1 message is stored first and may be overtaken by a QoS 0 one
  const qos = (i: number): 0 | 1 => (i % 2) as 0 | 1
  const clients = await Promise.all(Array.from({ length: publishers }, async (_, p) => await connect(url(), { clientId: `many-${p}` })))
  t.teardown(() => closeAll(...clients))
  clients.forEach((c, p) => sizesOf(p).forEach((size, i) => c.publish(`many/${p}/${qos(i)}`, payload(i, size), { qos: qos(i) })))
  const byTopic = await got
  for (let p = 0; p < publishers; p++) {
    for (const q of [0, 1]) {
      const mine = (_: unknown, i: number): boolean => qos(i) === q
      const got = byTopic.get(`many/${p}/${q}`)?.map((buf) => [buf.readUInt32BE(0), buf] as const)
      t.same(got?.map(([i]) => i), sizesOf(p).map((_, i) => i).filter(mine), `publisher ${p} QoS ${q}: every message, in order`)
      t.ok(got?.every(([i, buf]) => buf.equals(payload(i, sizesOf(p)[i]))), `publisher ${p} QoS ${q}: each whole`)
    }
  }
})

t.test('a publisher that trickles a packet byte by byte, then sends 300 KiB at once', async (t) => {
  const reader = await subscriber(t, 'trickle/#')
  const raw = await RawClient.open(b.port())
  t.teardown(() => raw.socket.destroy())
  await raw.connect({ clientId: 'trickler' })
  const sizes = [40_000, ...Array.from({ length: 300 }, (_, i) => 4 + (i * 37) % 2000)]
  const got = collect(reader, sizes.length)
  const wire = sizes.map((size, i) => mqttPacket.generate({ cmd: 'publish', topic: 'trickle/x', payload: payload(i, size), qos: 0, retain: false, dup: false }))
  const first = wire[0]
  for (let at = 0; at < 64; at++) {
    raw.socket.write(first.subarray(at, at + 1))
    await new Promise((resolve) => setImmediate(resolve))
  }
  raw.socket.write(Buffer.concat([first.subarray(64), ...wire.slice(1)]))
  samePayloads(t, (await got).get('trickle/x'), sizes, 'the trickled then flooded messages')
})

t.test('PUBLISHes and a PINGREQ sent in one write behind the CONNECT, while the client is paused for its authentication', async (t) => {
  const reader = await subscriber(t, 'behind/#')
  const raw = await RawClient.open(b.port())
  t.teardown(() => raw.socket.destroy())
  const sizes = Array.from({ length: 200 }, (_, i) => 300 + (i * 131) % 3000)
  const got = collect(reader, sizes.length)
  const connectPacket = mqttPacket.generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: true, keepalive: 60, clientId: 'behind' })
  const publishes = sizes.map((size, i) => mqttPacket.generate({ cmd: 'publish', topic: 'behind/x', payload: payload(i, size), qos: 0, retain: false, dup: false }))
  raw.socket.write(Buffer.concat([connectPacket, ...publishes, mqttPacket.generate({ cmd: 'pingreq' })]))
  t.match(await raw.next('connack', DEADLINE_MS), { returnCode: 0 })
  samePayloads(t, (await got).get('behind/x'), sizes, 'the messages behind the CONNECT')
  t.ok(await raw.next('pingresp', DEADLINE_MS), 'the PINGREQ after them is answered')
})
