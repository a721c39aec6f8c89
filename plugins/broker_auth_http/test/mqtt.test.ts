// The plugin loaded by a real node (data/loaded_plugins + its conf file) and
// real MQTT clients: the HTTP server's answers become CONNACK and SUBACK codes.
import t from 'tap'
import type { ISubackPacket } from 'mqtt-packet'
import { startBroker, type TestBroker } from '../../../test/helpers/broker.js'
import { closeAll, connect, nextMessages } from '../../../test/helpers/mqtt.js'
import { RawClient } from '../../../test/helpers/raw-client.js'
import { startAuthServer, type AuthServer } from './server.js'

let http: AuthServer
let broker: TestBroker

t.before(async () => {
  http = await startAuthServer()
  http.answer((seen) => {
    const user = seen.form.username ?? seen.query.username
    if (seen.path === '/mqtt/auth') {
      if (user === 'tenant') return { status: 200, body: '{"mountpoint":"tenant/a/"}' }
      return user === 'good' || user === 'root' || user === 'watcher' ? { status: 200 } : { status: 401 }
    }
    if (seen.path === '/mqtt/superuser') return { status: user === 'root' ? 200 : 403 }
    return { status: seen.query.topic.startsWith('forbidden/') ? 403 : 200 }
  })
  broker = await startBroker({ 'mqtt.allow_anonymous': 'false', 'mqtt.acl_nomatch': 'allow' }, ['tcp'], undefined, {
    plugins: {
      broker_auth_http: {
        'auth.http.auth_req': http.url('/mqtt/auth'),
        'auth.http.super_req': http.url('/mqtt/superuser'),
        'auth.http.acl_req': http.url('/mqtt/acl'),
        'auth.http.request.timeout': '2s'
      }
    }
  })
})
t.teardown(async () => {
  await broker?.stop()
  await http?.close()
})

async function connack (version: 4 | 5, username: string, password: string): Promise<number> {
  const raw = await RawClient.open(broker.port(), version)
  try {
    const ack = await raw.connect({ clientId: `raw-${username}-${version}`, username, password: Buffer.from(password) })
    return (version === 5 ? ack.reasonCode : ack.returnCode) ?? -1
  } finally {
    raw.end()
  }
}

async function granted (username: string, topics: string[]): Promise<number[]> {
  const raw = await RawClient.open(broker.port(), 4)
  try {
    const ack = await raw.connect({ clientId: `sub-${username}`, username, password: Buffer.from('pw') })
    if (ack.returnCode !== 0) throw new Error(`${username} was refused (${ack.returnCode})`)
    raw.send({ cmd: 'subscribe', messageId: 1, subscriptions: topics.map((topic) => ({ topic, qos: 1 as const })) })
    return (await raw.next('suback') as ISubackPacket).granted as number[]
  } finally {
    raw.end()
  }
}

t.test('a client the HTTP server allows connects; one it refuses gets CONNACK 5 / 0x87', async (t) => {
  const client = await connect(`mqtt://127.0.0.1:${broker.port()}`, { clientId: 'mqttjs-good', username: 'good', password: 'pw' })
  t.teardown(() => closeAll(client))
  t.ok(client.connected, 'MQTT.js client connected')
  const seen = http.seen.find((s) => s.path === '/mqtt/auth' && s.form.clientid === 'mqttjs-good')
  t.strictSame(seen?.form, { clientid: 'mqttjs-good', username: 'good', password: 'pw' }, 'the server saw the CONNECT fields')
  t.equal(await connack(4, 'bad', 'pw'), 5, 'MQTT 3.1.1: not authorized')
  t.equal(await connack(5, 'bad', 'pw'), 0x87, 'MQTT 5: 0x87 Not authorized')
  t.equal(await connack(5, 'good', 'pw'), 0)
})

t.test('an ACL refusal from the HTTP server is SUBACK 0x80; a superuser is not asked', async (t) => {
  http.seen.length = 0
  t.strictSame(await granted('good', ['open/x', 'forbidden/x']), [1, 0x80])
  t.strictSame(http.seen.filter((s) => s.path === '/mqtt/acl').map((s) => [s.query.access, s.query.topic]).sort(),
    [['1', 'forbidden/x'], ['1', 'open/x']], 'asked with access=1 and each filter')
  http.seen.length = 0
  t.strictSame(await granted('root', ['forbidden/x']), [1], 'the superuser may')
  t.strictSame(http.seen.map((s) => s.path), ['/mqtt/auth', '/mqtt/superuser'], 'no ACL request for the superuser')
})

t.test('a mountpoint from the JSON answer prefixes the client\'s topics', async (t) => {
  const url = `mqtt://127.0.0.1:${broker.port()}`
  const watcher = await connect(url, { clientId: 'watcher', username: 'watcher', password: 'pw' })
  const tenant = await connect(url, { clientId: 'tenant-1', username: 'tenant', password: 'pw' })
  t.teardown(() => closeAll(watcher, tenant))
  await watcher.subscribeAsync('tenant/#', { qos: 1 })
  const got = nextMessages(watcher, 1)
  await tenant.publishAsync('data', 'hello', { qos: 1 })
  t.strictSame((await got).map((m) => [m.topic, m.payload]), [['tenant/a/data', 'hello']])
})
