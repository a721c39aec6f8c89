// Conformance details of issue 15 checked with real clients: every matching
// filter gets each message once (#5); Server Keep Alive (#4).
import t from 'tap'
import { startBroker, type TestBroker } from './helpers/broker.js'
import { closeAll, connect, nextMessages, noMessageWithin, type MqttClient, type Received } from './helpers/mqtt.js'
import { RawClient } from './helpers/raw-client.js'

interface Test { teardown: (fn: () => unknown) => void }

async function broker (t: Test, settings: Record<string, string | number> = {}): Promise<TestBroker> {
  // presence notices are broker_modules' (loaded by default on a new install)
  const b = await startBroker(settings, ['tcp'], undefined, { plugins: { broker_modules: {} } })
  t.teardown(b.stop)
  return b
}

async function client (t: Test, b: TestBroker, clientId: string, options: Record<string, unknown> = {}): Promise<MqttClient> {
  const c = await connect(`mqtt://127.0.0.1:${b.port()}`, { clientId, ...options })
  t.teardown(() => closeAll(c))
  return c
}

/** The next message on a topic ending with `suffix`, ignoring the others (uptime, datetime …). */
async function nextEndingWith (c: MqttClient, suffix: string, timeoutMs = 15_000): Promise<Received> {
  return await new Promise((resolve, reject) => {
    const timer = setTimeout(() => { c.off('message', onMessage); reject(new Error(`no message on …${suffix}`)) }, timeoutMs)
    function onMessage (topic: string, payload: Buffer, packet: { retain: boolean, qos: number }): void {
      if (!topic.endsWith(suffix)) return
      clearTimeout(timer)
      c.off('message', onMessage)
      resolve({ topic, payload: payload.toString(), retain: packet.retain, qos: packet.qos })
    }
    c.on('message', onMessage)
  })
}

for (const filter of ['$SYS/#', '$SYS/brokers/+/clients/#', '$SYS/brokers/+/clients/+/disconnected']) {
  t.test(`a ${filter} subscriber gets the presence messages of a client that comes and goes`, async (t) => {
    const b = await broker(t)
    const watcher = await client(t, b, 'watcher', { protocolVersion: 5 })
    await watcher.subscribeAsync(filter, { qos: 1 })
    const gone = nextEndingWith(watcher, '/clients/visitor/disconnected')
    const visitor = await connect(`mqtt://127.0.0.1:${b.port()}`, { clientId: 'visitor' })
    await visitor.endAsync()
    const message = await gone
    t.equal(message.qos, 1, 'QoS 1 (module.presence.qos)')
    t.match(JSON.parse(message.payload), { clientid: 'visitor', reason: String }, 'the disconnected payload')
  })
}

t.test('overlapping subscriptions still get one copy of each message', async (t) => {
  const b = await broker(t)
  for (const version of [4, 5] as const) {
    const sub = await client(t, b, `overlap-${version}`, { protocolVersion: version })
    await sub.subscribeAsync({ 'o/#': { qos: 1 }, 'o/+': { qos: 0 }, 'o/x': { qos: 1 } })
    const pub = await client(t, b, `pub-${version}`)
    const first = nextMessages(sub, 1)
    await pub.publishAsync('o/x', 'once', { qos: 1 })
    t.equal((await first)[0].payload, 'once', `v${version}: delivered`)
    t.ok(await noMessageWithin(sub, 500), `v${version}: no second copy`)
    // the same message from a second publisher is a new message
    const second = nextMessages(sub, 2)
    await pub.publishAsync('o/x', 'again', { qos: 0 })
    await pub.publishAsync('o/x', 'third', { qos: 1 })
    t.same((await second).map((m) => m.payload), ['again', 'third'], `v${version}: later messages each once`)
  }
})

t.test('zone.external.server_keepalive: MQTT 5 clients are told and held to it, MQTT 3.x keep their own', async (t) => {
  const b = await broker(t)
  const v5Before = await RawClient.open(b.port(), 5)
  t.teardown(() => v5Before.end())
  t.equal((await v5Before.connect({ clientId: 'v5-before', keepalive: 60 })).properties?.serverKeepAlive, undefined, 'off by default: no Server Keep Alive')

  b.node.config.set('zone.external.server_keepalive', '1')
  const v5 = await RawClient.open(b.port(), 5)
  t.teardown(() => v5.end())
  const connack = await v5.connect({ clientId: 'v5', keepalive: 60 })
  t.equal(connack.reasonCode, 0)
  t.equal(connack.properties?.serverKeepAlive, 1, 'CONNACK carries Server Keep Alive')
  const v311 = await RawClient.open(b.port(), 4)
  t.teardown(() => v311.end())
  const connack311 = await v311.connect({ clientId: 'v311', keepalive: 60 })
  t.equal(connack311.returnCode, 0, 'an MQTT 3.1.1 client with its own keep alive is accepted')

  // silent clients: 1 s × 1.5 is the server's limit, the clients asked for 60 s
  t.ok(await v5.waitClosed(20_000), 'the MQTT 5 client is held to the server keep alive')
  t.notOk(v311.closed, 'the MQTT 3.1.1 client keeps its own keep alive')
  t.notOk(v5Before.closed, 'a connection made before the change keeps its keep alive')
})
