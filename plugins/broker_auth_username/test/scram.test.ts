// MQTT 5 enhanced authentication with SCRAM-SHA-256 (RFC 7677) against the
// plugin's users, on the wire: a full exchange for a configured user and for
// one added at run time (stored as pbkdf2, never in plain text), a wrong
// password, and a CONNECT user name that differs from the SCRAM one.
import t from 'tap'
import type { IAuthPacket, IConnackPacket } from 'mqtt-packet'
import { startBroker, type TestBroker } from '../../../test/helpers/broker.js'
import { RawClient } from '../../../test/helpers/raw-client.js'
import { ScramClient } from '../../../test/helpers/scram-client.js'
import plugin, { type CredentialApi } from '../index.js'

const METHOD = 'SCRAM-SHA-256'

/** Runs the exchange; resolves the CONNACK reason code and whether the server proved it knows the password. */
async function scramConnect (broker: TestBroker, user: string, password: string, connectUsername?: string): Promise<{ code: number, serverVerified: boolean }> {
  const raw = await RawClient.open(broker.port(), 5)
  try {
    const scram = new ScramClient(user, password)
    raw.send({
      cmd: 'connect', protocolId: 'MQTT', protocolVersion: 5, clean: true, keepalive: 60, clientId: `scram-${user}-${Math.random()}`,
      username: connectUsername,
      properties: { authenticationMethod: METHOD, authenticationData: scram.first() }
    })
    const challenge = await raw.next(['auth', 'connack'])
    if (challenge.cmd === 'connack') return { code: (challenge as IConnackPacket).reasonCode ?? -1, serverVerified: false }
    const serverFirst = (challenge as IAuthPacket).properties!.authenticationData!
    raw.send({ cmd: 'auth', reasonCode: 0x18, properties: { authenticationMethod: METHOD, authenticationData: await scram.final(serverFirst) } })
    const connack = await raw.next('connack') as IConnackPacket
    const serverFinal = connack.properties?.authenticationData
    return { code: connack.reasonCode ?? -1, serverVerified: serverFinal !== undefined && scram.verify(serverFinal) }
  } finally {
    raw.end()
  }
}

t.test('SCRAM-SHA-256 exchanges against configured and stored users', async (t) => {
  const broker = await startBroker({ 'mqtt.allow_anonymous': 'false' }, ['tcp'], undefined, {
    plugins: { [plugin.name]: { 'auth.user.1.username': 'alice', 'auth.user.1.password': 'alice-pw' } }
  })
  t.teardown(broker.stop)
  t.same(await scramConnect(broker, 'alice', 'alice-pw'), { code: 0, serverVerified: true }, 'configured user: accepted, and the server signature checks out')
  t.same(await scramConnect(broker, 'alice', 'wrong'), { code: 0x86, serverVerified: false }, 'wrong password: bad user name or password')
  await broker.node.plugins.api<CredentialApi>(plugin.name)!.add('bob', 'bob-pw')
  t.same(await scramConnect(broker, 'bob', 'bob-pw'), { code: 0, serverVerified: true }, 'a stored (pbkdf2) user works without its plain password')
  t.same(await scramConnect(broker, 'nobody', 'x'), { code: 0x86, serverVerified: false }, 'unknown user')
  t.same(await scramConnect(broker, 'alice', 'alice-pw', 'bob'), { code: 0x86, serverVerified: false }, 'the CONNECT user name must be the SCRAM user')
})
