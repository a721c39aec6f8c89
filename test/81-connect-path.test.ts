// The CONNECT path (issue 20 #2). A resumed session whose queue is empty is
// not read from the store (engine patch 196: no stream per connect); one with
// queued messages gets them in order, also after a restart (the queue counts
// are read from the store at start). The engine's own `new/clients` notice,
// published on every connect, closes nothing; another node's still takes the
// client over.
import { rm } from 'node:fs/promises'
import t from 'tap'
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt'
import type { IConnackPacket } from 'mqtt-packet'
import { startBroker, tempDir, type TestBroker } from './helpers/broker.js'
import { waitFor } from './helpers/cluster.js'
import { waitEvent } from './helpers/mqtt.js'
import { engineClient, enginePersistence } from '../lib/engine/internals.js'

const DEADLINE_MS = 20_000
const numbered = (from: number, to: number): string[] => Array.from({ length: to - from + 1 }, (_, i) => `m${from + i}`)

interface Opened { client: MqttClient, got: string[], connack: IConnackPacket }

/** Connects with a message listener in place before the CONNACK (queued messages follow it at once). */
async function open (broker: TestBroker, clientId: string, options: IClientOptions = {}): Promise<Opened> {
  const client = mqtt.connect(`mqtt://127.0.0.1:${broker.port()}`, { clientId, reconnectPeriod: 0, ...options })
  const got: string[] = []
  client.on('message', (_topic, payload) => got.push(payload.toString()))
  const [connack] = await waitEvent<[IConnackPacket]>(client, 'connect', DEADLINE_MS)
  return { client, got, connack }
}

async function received (opened: Opened, count: number): Promise<string[]> {
  while (opened.got.length < count) await waitEvent(opened.client, 'message', DEADLINE_MS)
  return opened.got
}

/** Counts the engine's reads of session queues (persistence.outgoingStream). */
function countQueueReads (broker: TestBroker): { reads: number } {
  const counter = { reads: 0 }
  const persistence = enginePersistence<{ outgoingStream: (...args: unknown[]) => unknown }>(broker.node.engine)
  const read = persistence.outgoingStream.bind(persistence)
  persistence.outgoingStream = (...args) => {
    counter.reads++
    return read(...args)
  }
  return counter
}

async function publishAll (broker: TestBroker, messages: string[]): Promise<void> {
  const { client } = await open(broker, 'cp-pub')
  for (const m of messages) await client.publishAsync('cp/t', m, { qos: 1 })
  await client.endAsync()
}

const dataDir = await tempDir()
t.teardown(() => rm(dataDir, { recursive: true, force: true }))
let broker = await startBroker({}, ['tcp'], dataDir)
t.teardown(async () => await broker.stop())

t.test('queued messages are delivered on resume; an empty queue is not read', async (t) => {
  const counter = countQueueReads(broker)
  const first = await open(broker, 'cp-sub', { clean: false })
  await first.client.subscribeAsync('cp/t', { qos: 1 })
  await first.client.endAsync()
  await publishAll(broker, numbered(1, 3))
  t.equal(broker.node.queues.length('cp-sub'), 3, 'three messages wait for the offline session')

  const resumed = await open(broker, 'cp-sub', { clean: false })
  t.same(await received(resumed, 3), numbered(1, 3), 'they are delivered after the CONNACK, in order')
  t.equal(counter.reads, 1, 'the queue was read once')
  await resumed.client.endAsync()
  t.equal(await waitFor(() => broker.node.queues.length('cp-sub') === 0, DEADLINE_MS, 'the queue to empty'), true, 'acknowledged messages left the queue')

  const again = await open(broker, 'cp-sub', { clean: false })
  t.equal(again.connack.sessionPresent, true, 'the session is resumed')
  const clean = await open(broker, 'cp-clean')
  t.equal(counter.reads, 1, 'neither the empty queue nor a clean session was read')
  await clean.client.publishAsync('cp/t', 'live', { qos: 1 })
  t.same(await received(again, 1), ['live'], 'the resumed session still gets live messages')
  await Promise.all([again.client.endAsync(), clean.client.endAsync()])
})

t.test('the engine\'s own new/clients notice closes nothing; another node\'s takes the client over', async (t) => {
  const engine = broker.node.engine
  const opened = await open(broker, 'cp-taken')
  const notice = async (nodeId: string): Promise<void> => await new Promise((resolve, reject) => {
    engine.publish({ cmd: 'publish', topic: `$SYS/${nodeId}/new/clients`, payload: Buffer.from('cp-taken'), qos: 0, retain: false, dup: false }, (err) => err == null ? resolve() : reject(err))
  })
  await notice(engine.id)
  t.equal(engineClient(engine, 'cp-taken')?.closed, false, 'the client is still connected after this node\'s notice')
  // same length as this node's id, differing in the last character only
  const other = engine.id.slice(0, -1) + (engine.id.endsWith('x') ? 'y' : 'x')
  const closed = waitEvent(opened.client, 'close', DEADLINE_MS)
  await notice(other)
  await closed
  t.equal(engineClient(engine, 'cp-taken'), undefined, 'another node\'s notice closed it')
})

t.test('messages queued before a restart are delivered after it', async (t) => {
  await publishAll(broker, numbered(4, 5))
  await broker.node.stop()
  broker = await startBroker({}, ['tcp'], dataDir)
  t.equal(broker.node.queues.length('cp-sub'), 2, 'the queue count is read from the store at start')
  const resumed = await open(broker, 'cp-sub', { clean: false })
  t.equal(resumed.connack.sessionPresent, true, 'the session survived the restart')
  t.same(await received(resumed, 2), numbered(4, 5), 'the queued messages are delivered in order')
  await resumed.client.endAsync()
})
