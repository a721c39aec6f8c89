// auth.http.failure (issue 14 #14): what a check answers when the HTTP server
// gives no answer. A real node and real MQTT clients; the ACL (or auth) URL
// points at a port nobody listens on, acl_nomatch is allow, so an ACL check
// passed on would let the client through.
import t, { type Test } from 'tap'
import { startBroker } from '../../../test/helpers/broker.js'
import { closeAll, connect } from '../../../test/helpers/mqtt.js'
import { deadPort, startAuthServer, type AuthServer } from './server.js'

let http: AuthServer
t.before(async () => {
  http = await startAuthServer()
  http.answer(() => ({ status: 200 }))
})
t.teardown(async () => { await http.close() })

async function nodeWith (t: Test, settings: Record<string, string>): Promise<string> {
  const broker = await startBroker({ 'mqtt.allow_anonymous': 'true', 'mqtt.acl_nomatch': 'allow' }, ['tcp'], undefined, {
    plugins: { broker_auth_http: { 'auth.http.request.retry_times': '0', ...settings } }
  })
  t.teardown(async () => { await broker.stop() })
  return `mqtt://127.0.0.1:${broker.port()}`
}

t.test('ACL server down, failure = deny (the default): SUBSCRIBE refused, PUBLISH dropped', async (t) => {
  const down = await deadPort()
  const url = await nodeWith(t, { 'auth.http.auth_req': http.url('/mqtt/auth'), 'auth.http.acl_req': `http://127.0.0.1:${down}/mqtt/acl` })
  const client = await connect(url, { protocolVersion: 5, clientId: 'acl-down', username: 'u', password: 'p' })
  t.teardown(async () => { await closeAll(client) })
  const granted = await client.subscribeAsync('secret/#', { qos: 1 }).then((g) => g.map((x) => x.qos), (err: { packet?: { granted: number[] } }) => err.packet?.granted)
  t.same(granted, [0x87], 'SUBACK 0x87 not authorized')
  await t.rejects(client.publishAsync('secret/x', 'leak', { qos: 1 }), { code: 0x87 }, 'PUBACK 0x87')
})

t.test('ACL server down, failure = ignore: the check passes on (acl_nomatch allow lets it through)', async (t) => {
  const down = await deadPort()
  const url = await nodeWith(t, { 'auth.http.auth_req': http.url('/mqtt/auth'), 'auth.http.acl_req': `http://127.0.0.1:${down}/mqtt/acl`, 'auth.http.failure': 'ignore' })
  const client = await connect(url, { protocolVersion: 5, clientId: 'acl-down-ignore', username: 'u', password: 'p' })
  t.teardown(async () => { await closeAll(client) })
  t.same((await client.subscribeAsync('secret/#', { qos: 1 })).map((g) => g.qos), [1])
})

t.test('auth server down: deny refuses the client (0x87); ignore leaves it to allow_anonymous', async (t) => {
  const down = await deadPort()
  const denying = await nodeWith(t, { 'auth.http.auth_req': `http://127.0.0.1:${down}/mqtt/auth` })
  await t.rejects(connect(denying, { protocolVersion: 5, clientId: 'auth-down', username: 'u', password: 'p' }), { code: 0x87 })
  const ignoring = await nodeWith(t, { 'auth.http.auth_req': `http://127.0.0.1:${down}/mqtt/auth`, 'auth.http.failure': 'ignore' })
  const client = await connect(ignoring, { protocolVersion: 5, clientId: 'auth-down-anon', username: 'u', password: 'p' })
  t.ok(client.connected, 'anonymous access decides')
  await closeAll(client)
})
