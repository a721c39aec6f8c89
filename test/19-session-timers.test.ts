// Session-expiry and will-delay timers survive a restart of the node: a
// session that expired while the node was down is gone after start, and a
// delayed will is published on time by the restarted node.
import { rm } from 'node:fs/promises'
import t from 'tap'
import { startBroker, tempDir } from './helpers/broker.js'
import { closeAll, connect, nextMessages } from './helpers/mqtt.js'
import { RawClient } from './helpers/raw-client.js'

const sleep = async (ms: number): Promise<void> => await new Promise((resolve) => setTimeout(resolve, ms))

t.test('a session that should have expired while the node was down is gone after start', async (t) => {
  const dataDir = await tempDir()
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  let broker = await startBroker({}, ['tcp'], dataDir)
  for (const [clientId, expiry] of [['short', 1], ['long', 3600]] as const) {
    const raw = await RawClient.open(broker.port(), 5)
    await raw.connect({ clientId, properties: { sessionExpiryInterval: expiry } })
    raw.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: `kept/${clientId}`, qos: 1 }] })
    await raw.next('suback')
    raw.end()
  }
  const stillConnected = await RawClient.open(broker.port(), 5)
  await stillConnected.connect({ clientId: 'at-stop', properties: { sessionExpiryInterval: 1 } })
  stillConnected.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'kept/at-stop', qos: 1 }] })
  await stillConnected.next('suback')
  await sleep(100)
  await broker.stop()
  await sleep(1500)
  broker = await startBroker({}, ['tcp'], dataDir)
  t.teardown(broker.stop)
  for (const [clientId, present] of [['short', false], ['at-stop', false], ['long', true]] as const) {
    const raw = await RawClient.open(broker.port(), 5)
    t.teardown(() => raw.end())
    const connack = await raw.connect({ clientId, clean: false, properties: { sessionExpiryInterval: 60 } })
    t.equal(connack.sessionPresent, present, `${clientId}: ${present ? 'still there' : 'expired while the node was down'}`)
  }
})

t.test('a restored session-expiry timer fires after the restart unless the client returns', async (t) => {
  const dataDir = await tempDir()
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  let broker = await startBroker({}, ['tcp'], dataDir)
  for (const clientId of ['returns', 'stays-away']) {
    const raw = await RawClient.open(broker.port(), 5)
    await raw.connect({ clientId, properties: { sessionExpiryInterval: 2 } })
    // sessionPresent reports a session with subscriptions
    raw.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: `kept/${clientId}`, qos: 1 }] })
    await raw.next('suback')
    raw.end()
  }
  await sleep(100)
  await broker.stop()
  broker = await startBroker({}, ['tcp'], dataDir)
  t.teardown(broker.stop)
  const back = await RawClient.open(broker.port(), 5)
  t.teardown(() => back.end())
  t.equal((await back.connect({ clientId: 'returns', clean: false, properties: { sessionExpiryInterval: 60 } })).sessionPresent, true)
  await sleep(2500)
  const away = await RawClient.open(broker.port(), 5)
  t.teardown(() => away.end())
  t.equal((await away.connect({ clientId: 'stays-away', clean: false, properties: { sessionExpiryInterval: 60 } })).sessionPresent, false, 'the timer fired after the restart')
  t.equal(back.closed, false, 'the returned client was not touched')
})

t.test('a delayed will armed before a stop is published on time after the restart', async (t) => {
  const dataDir = await tempDir()
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  let broker = await startBroker({}, ['tcp'], dataDir)
  const dying = await RawClient.open(broker.port(), 5)
  await dying.connect({
    clientId: 'dying',
    properties: { sessionExpiryInterval: 30 },
    will: { topic: 'wills/dying', payload: Buffer.from('gone'), qos: 1, retain: false, properties: { willDelayInterval: 2 } }
  })
  dying.end()
  await sleep(200)
  await broker.stop()
  const stoppedAt = Date.now()
  broker = await startBroker({}, ['tcp'], dataDir)
  t.teardown(broker.stop)
  const watcher = await connect(`mqtt://127.0.0.1:${broker.port()}`, { clientId: 'watcher', protocolVersion: 5 })
  t.teardown(() => closeAll(watcher))
  await watcher.subscribeAsync('wills/#', { qos: 1 })
  const [will] = await nextMessages(watcher, 1, 5000)
  const elapsed = Date.now() - stoppedAt
  t.equal(will.payload, 'gone')
  t.ok(elapsed >= 1500 && elapsed < 4000, `published about 2 s after the disconnect (${elapsed} ms after the stop)`)
})
