// Banned clients (SPEC §2.16): by client id, user name and IP address, with
// `until` honoured at connect, kept durably, swept when expired.
import { rm } from 'node:fs/promises'
import t from 'tap'
import type { BannedEntry } from '../lib/access/banned.js'
import { startBroker, tempDir, type TestBroker } from './helpers/broker.js'
import { RawClient } from './helpers/raw-client.js'

const now = (): number => Math.floor(Date.now() / 1000)
const entry = (fields: Pick<BannedEntry, 'who' | 'as'> & Partial<BannedEntry>): BannedEntry =>
  ({ reason: 'test', desc: '', by: 'tests', until: now() + 60, ...fields })

async function connack (broker: TestBroker, version: 4 | 5, clientId: string, username?: string): Promise<number> {
  const raw = await RawClient.open(broker.port(), version)
  try {
    const ack = await raw.connect({ clientId, username })
    return (version === 5 ? ack.reasonCode : ack.returnCode) ?? -1
  } finally {
    raw.end()
  }
}

t.test('each kind of ban refuses the client: MQTT 5 CONNACK 0x8A, MQTT 3.1.1 return code 5', async (t) => {
  const broker = await startBroker()
  t.teardown(broker.stop)
  await broker.node.banned.add(entry({ who: 'bad-client', as: 'client_id' }))
  await broker.node.banned.add(entry({ who: 'mallory', as: 'username' }))
  t.equal(await connack(broker, 5, 'bad-client'), 0x8a)
  t.equal(await connack(broker, 4, 'bad-client'), 5)
  t.equal(await connack(broker, 5, 'ok-1', 'mallory'), 0x8a)
  t.equal(await connack(broker, 4, 'ok-2', 'alice'), 0, 'others still connect')
  await broker.node.banned.add(entry({ who: '127.0.0.1', as: 'ip_address' }))
  t.equal(await connack(broker, 5, 'ok-3'), 0x8a, 'the whole address is banned')
  t.equal(await broker.node.banned.remove('ip_address', '127.0.0.1'), true)
  t.equal(await connack(broker, 5, 'ok-4'), 0, 'lifted at once')
  t.equal(await broker.node.banned.remove('ip_address', '127.0.0.1'), false, 'removing twice finds nothing')
})

t.test('until is honoured at connect, and expired entries are swept', async (t) => {
  const dataDir = await tempDir()
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  const broker = await startBroker({}, ['tcp'], dataDir)
  t.teardown(broker.stop)
  await broker.node.banned.add(entry({ who: 'lasting', as: 'client_id' }))
  await broker.node.banned.add(entry({ who: 'past', as: 'client_id', until: now() - 1 }))
  t.equal(await connack(broker, 4, 'past'), 0, 'an expired ban does not apply')
  await broker.node.banned.add(entry({ who: 'brief', as: 'client_id', until: now() + 1 }))
  t.equal(await connack(broker, 4, 'brief'), 5, 'banned while it lasts')
  await new Promise((resolve) => setTimeout(resolve, 2100))
  t.equal(await connack(broker, 4, 'brief'), 0, 'allowed once it ends')
  t.same(broker.node.banned.list().map((e) => e.who), ['lasting'], 'expired entries are not listed')
  await broker.node.banned.sweep()
  await broker.stop()
  const again = await startBroker({}, ['tcp'], dataDir)
  t.teardown(again.stop)
  t.same(again.node.banned.list().map((e) => e.who), ['lasting'], 'after a restart only the live entry is there')
})

t.test('entries survive a restart', async (t) => {
  const dataDir = await tempDir()
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  let broker = await startBroker({}, ['tcp'], dataDir)
  await broker.node.banned.add(entry({ who: 'kept', as: 'client_id', reason: 'abuse' }))
  await broker.stop()
  broker = await startBroker({}, ['tcp'], dataDir)
  t.teardown(broker.stop)
  t.same(broker.node.banned.list().map((e) => [e.who, e.as, e.reason]), [['kept', 'client_id', 'abuse']])
  t.equal(await connack(broker, 5, 'kept'), 0x8a)
})
