// The embedded store (LevelDB under data/) keeps retained messages, persistent
// sessions, their subscriptions and queued QoS 1/2 messages across a clean stop
// and a kill -9 of a real `bin/broker` process.
import { rm } from 'node:fs/promises'
import t from 'tap'
import type { IDisconnectPacket } from 'mqtt-packet'
import { RawClient } from './helpers/raw-client.js'
import mqtt from 'mqtt'
import { spawnBroker, tempDir, type BrokerProcess } from './helpers/broker.js'
import { closeAll, connect, nextMessages, waitEvent, type MqttClient } from './helpers/mqtt.js'

async function stopWith (broker: BrokerProcess, signal: NodeJS.Signals): Promise<number | string> {
  broker.child.kill(signal)
  return await broker.exited
}

interface Scenario { name: string, signal: NodeJS.Signals, protocolVersion: 4 | 5 }
const scenarios: Scenario[] = [
  { name: 'MQTT 3.1.1 clean session false, clean stop (SIGTERM)', signal: 'SIGTERM', protocolVersion: 4 },
  { name: 'MQTT 3.1.1 clean session false, kill -9', signal: 'SIGKILL', protocolVersion: 4 },
  { name: 'MQTT 5 session expiry 300 s, kill -9', signal: 'SIGKILL', protocolVersion: 5 }
]

for (const { name, signal, protocolVersion } of scenarios) {
  t.test(name, async (t) => {
    const dataDir = await tempDir()
    t.teardown(() => rm(dataDir, { recursive: true, force: true }))
    let broker = await spawnBroker(dataDir)
    t.teardown(() => { broker.child.kill('SIGKILL') })
    const url = `mqtt://127.0.0.1:${broker.port}`
    const session = protocolVersion === 5
      ? { protocolVersion, clean: true, properties: { sessionExpiryInterval: 300 } }
      : { protocolVersion, clean: false }

    let subscriber: MqttClient | undefined = await connect(url, { clientId: 'durable-sub', ...session })
    await subscriber.subscribeAsync('durable/+', { qos: 1 })
    await subscriber.subscribeAsync('durable2/#', { qos: 2 })
    await subscriber.endAsync()

    const publisher = await connect(url, { clientId: 'durable-pub', protocolVersion })
    for (let i = 1; i <= 3; i++) await publisher.publishAsync('durable/a', `queued ${i}`, { qos: 1 })
    await publisher.publishAsync('durable2/x', 'queued qos2', { qos: 2 })
    await publisher.publishAsync('durable/retained', 'kept', { qos: 1, retain: true })
    await publisher.endAsync()

    const exit = await stopWith(broker, signal)
    t.equal(exit, signal === 'SIGKILL' ? 'SIGKILL' : 0, signal === 'SIGTERM' ? 'a clean stop exits 0' : 'killed')
    broker = await spawnBroker(dataDir, {}, broker.port)

    // listeners go on before the CONNACK arrives: queued messages follow it at once
    subscriber = mqtt.connect(url, {
      clientId: 'durable-sub',
      protocolVersion,
      clean: false,
      reconnectPeriod: 0,
      ...(protocolVersion === 5 ? { properties: { sessionExpiryInterval: 300 } } : {})
    })
    t.teardown(() => closeAll(subscriber))
    const connack = waitEvent<[{ sessionPresent: boolean }]>(subscriber, 'connect')
    const queued = nextMessages(subscriber, 5)
    t.equal((await connack)[0].sessionPresent, true, 'the session is still there')
    const messages = (await queued).map((m) => m.payload).sort()
    t.same(messages, ['kept', 'queued 1', 'queued 2', 'queued 3', 'queued qos2'], 'every acknowledged message is delivered after the restart')

    const late = await connect(url, { clientId: 'late-sub' })
    t.teardown(() => closeAll(late))
    const retained = nextMessages(late, 1)
    await late.subscribeAsync('durable/retained')
    const [message] = await retained
    t.same([message.payload, message.retain], ['kept', true], 'the retained message survived')
  })
}

t.test('SIGTERM sends MQTT 5 clients DISCONNECT 0x8B and exits 0', async (t) => {
  const dataDir = await tempDir()
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  const broker = await spawnBroker(dataDir)
  t.teardown(() => { broker.child.kill('SIGKILL') })
  // a raw client: it parses what arrives before the connection closes (MQTT.js may
  // tear down on the FIN before handling a DISCONNECT that came with it)
  const client = await RawClient.open(broker.port, 5)
  t.teardown(() => client.end())
  await client.connect({ clientId: 'shutdown-v5' })
  broker.child.kill('SIGTERM')
  t.equal((await client.next('disconnect') as IDisconnectPacket).reasonCode, 0x8b, 'Server shutting down')
  t.equal(await broker.exited, 0)
  t.ok(broker.lines.some((line) => line.includes('broker node stopped')), 'the stop is logged')
})

t.test('a message queued for an offline MQTT 5 session keeps its properties and expiry', async (t) => {
  const dataDir = await tempDir()
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  const broker = await spawnBroker(dataDir)
  t.teardown(() => { broker.child.kill('SIGKILL') })
  const url = `mqtt://127.0.0.1:${broker.port}`
  const session = { clientId: 'props-sub', protocolVersion: 5 as const, clean: false, properties: { sessionExpiryInterval: 300 } }
  let sub = await connect(url, session)
  await sub.subscribeAsync('props/t', { qos: 1 })
  await sub.endAsync()
  const pub = await connect(url, { clientId: 'props-pub', protocolVersion: 5 })
  await pub.publishAsync('props/t', 'with properties', {
    qos: 1,
    properties: { contentType: 'text/plain', userProperties: { origin: 'test' }, messageExpiryInterval: 300 }
  })
  await pub.publishAsync('props/t', 'short lived', { qos: 1, properties: { messageExpiryInterval: 1 } })
  await pub.endAsync()
  await new Promise((resolve) => setTimeout(resolve, 1500))
  sub = mqtt.connect(url, { ...session, reconnectPeriod: 0 })
  t.teardown(() => closeAll(sub))
  const [message] = await nextMessages(sub, 1)
  t.equal(message.payload, 'with properties', 'the expired message is not delivered')
  t.equal(message.properties?.contentType, 'text/plain')
  t.same(message.properties?.userProperties, { origin: 'test' })
  t.ok((message.properties?.messageExpiryInterval as number) <= 300, 'the remaining lifetime is sent')
})
