// MQTT 5 enhanced authentication (§4.12) on the wire: the AUTH exchange at
// CONNECT (continue 0x18), re-authentication (0x19), an unknown method, and a
// failed exchange — with a fixture plugin's challenge method.
import t from 'tap'
import type { IAuthPacket, IConnackPacket, IDisconnectPacket } from 'mqtt-packet'
import { FIXTURE_PLUGINS, startBroker, type TestBroker } from './helpers/broker.js'
import { RawClient } from './helpers/raw-client.js'

const method = (data?: string, authenticationMethod = 'FIXTURE'): { authenticationMethod: string, authenticationData?: Buffer } =>
  ({ authenticationMethod, ...(data === undefined ? {} : { authenticationData: Buffer.from(data) }) })

async function withFixture (t: { teardown: (fn: () => unknown) => void }): Promise<TestBroker> {
  const broker = await startBroker({}, ['tcp'], undefined, { pluginDirs: [FIXTURE_PLUGINS], plugins: { broker_fixture_a: { 'fixture.enhanced': 'true' } } })
  t.teardown(broker.stop)
  return broker
}

async function challenged (broker: TestBroker, t: { teardown: (fn: () => unknown) => void }, clientId: string): Promise<RawClient> {
  const raw = await RawClient.open(broker.port(), 5)
  t.teardown(() => raw.end())
  raw.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 5, clean: true, keepalive: 60, clientId, properties: method('hello') })
  return raw
}

t.test('an unknown method gets CONNACK 0x8C', async (t) => {
  const broker = await withFixture(t)
  const raw = await RawClient.open(broker.port(), 5)
  t.teardown(() => raw.end())
  t.equal((await raw.connect({ clientId: 'unknown', properties: method('x', 'NO-SUCH-METHOD') })).reasonCode, 0x8c)
})

t.test('CONNECT → AUTH 0x18 → AUTH 0x18 → CONNACK with the method and final data', async (t) => {
  const broker = await withFixture(t)
  const raw = await challenged(broker, t, 'exchange')
  const challenge = await raw.next('auth') as IAuthPacket
  t.equal(challenge.reasonCode, 0x18, 'continue authentication')
  t.equal(challenge.properties?.authenticationData?.toString(), 'challenge')
  raw.send({ cmd: 'auth', reasonCode: 0x18, properties: method('response') })
  const connack = await raw.next('connack') as IConnackPacket
  t.equal(connack.reasonCode, 0)
  t.equal(connack.properties?.authenticationMethod, 'FIXTURE')
  t.equal(connack.properties?.authenticationData?.toString(), 'welcome')
  raw.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'after/auth', qos: 0 }] })
  t.ok(await raw.next('suback'), 'the session works')
})

t.test('a wrong answer gets CONNACK 0x87', async (t) => {
  const broker = await withFixture(t)
  const raw = await challenged(broker, t, 'wrong')
  await raw.next('auth')
  raw.send({ cmd: 'auth', reasonCode: 0x18, properties: method('guess') })
  t.equal((await raw.next('connack') as IConnackPacket).reasonCode, 0x87)
  t.ok(await raw.waitClosed())
})

t.test('re-authentication: AUTH 0x19 → 0x18 → 0x00; a failed one ends with DISCONNECT 0x87', async (t) => {
  const broker = await withFixture(t)
  const raw = await challenged(broker, t, 'reauth')
  await raw.next('auth')
  raw.send({ cmd: 'auth', reasonCode: 0x18, properties: method('response') })
  await raw.next('connack')

  raw.send({ cmd: 'auth', reasonCode: 0x19, properties: method('hello') })
  t.equal((await raw.next('auth') as IAuthPacket).reasonCode, 0x18)
  raw.send({ cmd: 'auth', reasonCode: 0x18, properties: method('response') })
  const success = await raw.next('auth') as IAuthPacket
  t.equal(success.reasonCode, 0, 'success')
  t.equal(success.properties?.authenticationData?.toString(), 'welcome')

  raw.send({ cmd: 'auth', reasonCode: 0x19, properties: method('hello') })
  await raw.next('auth')
  raw.send({ cmd: 'auth', reasonCode: 0x18, properties: method('nope') })
  t.equal((await raw.next('disconnect') as IDisconnectPacket).reasonCode, 0x87)
})

t.test('AUTH from a client that did not authenticate with a method is a protocol error', async (t) => {
  const broker = await withFixture(t)
  const raw = await RawClient.open(broker.port(), 5)
  t.teardown(() => raw.end())
  await raw.connect({ clientId: 'plain' })
  raw.send({ cmd: 'auth', reasonCode: 0x19, properties: method('hello') })
  t.equal((await raw.next('disconnect') as IDisconnectPacket).reasonCode, 0x82)
})
