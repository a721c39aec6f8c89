// broker_auth_jwt in a real node, with MQTT.js clients: CONNACK codes and the
// acl claim applied to SUBSCRIBE and PUBLISH.
import t from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { startBroker, type TestBroker } from '../../../test/helpers/broker.js'
import { closeAll, connect, nextMessages, noMessageWithin } from '../../../test/helpers/mqtt.js'
import { now, SECRET, sign, tempDir } from './helpers.js'

let broker: TestBroker
let url: string

t.before(async () => {
  const etc = tempDir(t)
  writeFileSync(join(etc, 'broker_auth_jwt.conf'), `auth.jwt.secret = ${SECRET}\n`)
  broker = await startBroker({ 'plugins.etc_dir': etc, 'mqtt.allow_anonymous': 'false' })
  await broker.node.plugins.load('broker_auth_jwt')
  url = `mqtt://127.0.0.1:${broker.port()}`
})
t.teardown(async () => { await broker.stop() })

t.test('a valid HS256 token as the password connects', async (t) => {
  const client = await connect(url, { protocolVersion: 5, clientId: 'jwt-ok', username: 'alice', password: await sign({ exp: now() + 60 }, 'HS256') })
  t.ok(client.connected)
  await closeAll(client)
})

t.test('an expired token gets CONNACK 0x87 (not authorized) on MQTT 5 and 5 on 3.1.1', async (t) => {
  const password = await sign({ exp: now() - 60 }, 'HS256')
  await t.rejects(connect(url, { protocolVersion: 5, clientId: 'jwt-old5', username: 'alice', password }), { code: 0x87 })
  await t.rejects(connect(url, { protocolVersion: 4, clientId: 'jwt-old4', username: 'alice', password }), { code: 5 })
})

t.test('the acl claim limits what the client may subscribe and publish', async (t) => {
  const password = await sign({ acl: { sub: ['t/#'], pub: ['t/ok'] } }, 'HS256')
  const client = await connect(url, { protocolVersion: 5, clientId: 'jwt-acl', username: 'alice', password })
  t.teardown(async () => { await closeAll(client) })
  await t.rejects(client.subscribeAsync('other/#'), { message: /Not authorized/, packet: { granted: [0x87] } }, 'other/# refused')
  t.same((await client.subscribeAsync('t/#')).map((g) => g.qos), [0], 't/# granted')
  await client.publishAsync('t/ok', 'yes')
  t.same((await nextMessages(client, 1)).map((m) => m.payload), ['yes'])
  await client.publishAsync('t/no', 'no')
  t.ok(await noMessageWithin(client, 300), 'a publish outside the pub list is dropped')
})
