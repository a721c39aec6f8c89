// auth.jwt.verify_claims.exp = required (issue 14 #14): a token without `exp`
// would be valid forever; with the setting it is refused, in a real node with
// MQTT.js clients, whatever auth.jwt.verify_claims says.
import t, { type Test } from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { startBroker } from '../../../test/helpers/broker.js'
import { closeAll, connect } from '../../../test/helpers/mqtt.js'
import { now, SECRET, settings, sign, tempDir } from './helpers.js'

async function nodeWith (t: Test, lines: string[]): Promise<string> {
  const etc = tempDir(t)
  writeFileSync(join(etc, 'broker_auth_jwt.conf'), [`auth.jwt.secret = ${SECRET}`, ...lines, ''].join('\n'))
  const broker = await startBroker({ 'plugins.etc_dir': etc, 'mqtt.allow_anonymous': 'false' })
  t.teardown(async () => { await broker.stop() })
  await broker.node.plugins.load('broker_auth_jwt')
  return `mqtt://127.0.0.1:${broker.port()}`
}

t.test('exp required: a token without exp is refused (MQTT 5 0x87, 3.1.1 code 5); one with exp connects', async (t) => {
  // verify_claims stays off: the exp requirement does not depend on it
  const url = await nodeWith(t, ['auth.jwt.verify_claims.exp = required'])
  const forever = await sign({ sub: 'alice' }, 'HS256')
  await t.rejects(connect(url, { protocolVersion: 5, clientId: 'no-exp5', username: 'alice', password: forever }), { code: 0x87 })
  await t.rejects(connect(url, { protocolVersion: 4, clientId: 'no-exp4', username: 'alice', password: forever }), { code: 5 })
  const client = await connect(url, { protocolVersion: 5, clientId: 'with-exp', username: 'alice', password: await sign({ sub: 'alice', exp: now() + 60 }, 'HS256') })
  t.ok(client.connected)
  await closeAll(client)
  await t.rejects(connect(url, { protocolVersion: 5, clientId: 'old-exp', username: 'alice', password: await sign({ exp: now() - 60 }, 'HS256') }), { code: 0x87 }, 'an expired one still refused')
})

t.test('exp optional (the default, as EMQ X): a token without exp connects', async (t) => {
  const url = await nodeWith(t, [])
  const client = await connect(url, { protocolVersion: 5, clientId: 'no-exp-ok', username: 'alice', password: await sign({ sub: 'alice' }, 'HS256') })
  t.ok(client.connected)
  await closeAll(client)
})

t.test('exp takes required or optional only; it is not a claim value to compare', async (t) => {
  t.throws(() => settings({ 'auth.jwt.secret': SECRET, 'auth.jwt.verify_claims.exp': '1700000000' }), /required or optional/)
  t.equal(settings({ 'auth.jwt.secret': SECRET, 'auth.jwt.verify_claims.exp': 'Required' })['auth.jwt.verify_claims.exp'], 'required')
})
