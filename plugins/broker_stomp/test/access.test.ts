// A STOMP client goes through the node's access control like any client:
// the auth chain (broker_auth_username, then mqtt.allow_anonymous), the
// gateway's own default user and stomp.allow_anonymous, the ACL on SEND and
// SUBSCRIBE, banned entries. Real stomp.py clients; the settings changed
// live through the management API.
import t from 'tap'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startPluginNode, type PluginNode } from '../../../lib/plugin-kit/testing.js'
import { StompPy, type StompEvent } from './clients.js'

let node: PluginNode
let port = 0
let dir = ''
const clients: StompPy[] = []

async function connect (login?: string, passcode?: string): Promise<{ py: StompPy, answer: StompEvent }> {
  const py = new StompPy(port)
  clients.push(py)
  return { py, answer: await py.connect({ login, passcode }) }
}

t.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'broker-stomp-acl-'))
  const acl = join(dir, 'acl.conf')
  await writeFile(acl, [
    '{deny, {user, "alice"}, publish, ["secret/#"]}.',
    '{deny, {user, "alice"}, subscribe, ["private/#"]}.',
    '{allow, all}.'
  ].join('\n'))
  node = await startPluginNode({
    plugin: 'broker_stomp',
    settings: { 'stomp.listener': '127.0.0.1:0' },
    node: { 'mqtt.allow_anonymous': 'false', 'mqtt.acl_file': acl },
    others: { broker_auth_username: { 'auth.user.1.username': 'alice', 'auth.user.1.password': 'secret' } },
    withApi: true
  })
  const { body } = await node.http('GET', `/nodes/${node.node.name}/listeners`)
  port = Number((body as Array<{ protocol: string, listen_on: string }>).find((l) => l.protocol === 'stomp:tcp')!.listen_on.split(':')[1])
})

t.teardown(async () => {
  await Promise.all(clients.map(async (c) => await c.stop()))
  await node.stop()
  await rm(dir, { recursive: true, force: true })
})

t.test('the auth chain decides: a wrong passcode and an anonymous client are refused, a known user and the default user let in', async (t) => {
  const wrong = await connect('alice', 'nope')
  t.match(wrong.answer, { event: 'error', headers: { message: 'login refused' }, body: /bad_username_or_password/ }, 'broker_auth_username refuses')
  await wrong.py.next('disconnected')

  const anonymous = await connect()
  t.match(anonymous.answer, { event: 'error', headers: { message: 'login refused' }, body: /not_authorized/ }, 'mqtt.allow_anonymous = false refuses')

  const alice = await connect('alice', 'secret')
  t.equal(alice.answer.event, 'connected')
  const guest = await connect('guest', 'guest')
  t.equal(guest.answer.event, 'connected', 'stomp.default_user is let in by the gateway')
  const notQuiteGuest = await connect('guest', 'guess')
  t.match(notQuiteGuest.answer, { event: 'error', body: /not_authorized/ }, 'the default login with another passcode is the chain\'s: refused')

  const { body } = await node.http('GET', '/connections')
  const stompUsers = (body as { items: Array<{ proto_name: string, username: string }> }).items.filter((c) => c.proto_name === 'STOMP').map((c) => c.username).sort()
  t.same(stompUsers, ['alice', 'guest'])
  await alice.py.stop()
  await guest.py.stop()
})

t.test('stomp.allow_anonymous = false refuses a CONNECT without login at the gateway (a live setting)', async (t) => {
  const path = `/nodes/${node.node.name}/plugin_configs/broker_stomp`
  t.equal((await node.http('PUT', path, { 'stomp.allow_anonymous': 'false' })).status, 200)
  const anonymous = await connect()
  t.match(anonymous.answer, { event: 'error', headers: { message: 'login refused' }, body: /anonymous access is off/ })
  const bad = await node.http('PUT', path, { 'stomp.frame.max_headers': 'lots' })
  t.equal(bad.status, 400)
  t.match(JSON.stringify(bad.body), /broker_stomp\.conf:\d+: stomp\.frame\.max_headers: \S+ is not (a number|an integer)/, 'a bad value refused with file:line')
  t.equal((await node.http('PUT', path, { 'stomp.allow_anonymous': null })).status, 200)
})

t.test('the ACL: a denied SEND and a denied SUBSCRIBE are ERRORs that say why', async (t) => {
  const watcher = await node.mqtt({ clientId: 'acl-watcher', username: 'alice', password: 'secret' })
  await watcher.subscribeAsync(['open/#', 'secret/#'], { qos: 1 })
  const seen: string[] = []
  watcher.on('message', (topic) => seen.push(topic))

  const sender = await connect('alice', 'secret')
  await sender.py.run({ op: 'send', destination: 'open/x', body: 'fine', headers: { receipt: 'ok' } })
  await sender.py.next('receipt', (e) => e.headers?.['receipt-id'] === 'ok')
  await sender.py.run({ op: 'send', destination: 'secret/x', body: 'no', headers: { receipt: 'denied' } })
  const error = await sender.py.next('error')
  t.match(error, { headers: { message: 'publish refused', 'receipt-id': 'denied' }, body: 'not authorized to publish to secret/x' })
  await sender.py.next('disconnected')

  const subscriber = await connect('alice', 'secret')
  await subscriber.py.run({ op: 'subscribe', destination: 'private/#', id: '1', headers: { receipt: 's' } })
  t.match(await subscriber.py.next('error'), { headers: { message: 'subscribe refused' }, body: 'not authorized to subscribe to private/#' })
  await subscriber.py.next('disconnected')

  await new Promise((resolve) => setTimeout(resolve, 200))
  t.same(seen, ['open/x'], 'the denied message was not routed')
  await watcher.endAsync()
})

t.test('a banned user name is refused with its reason', async (t) => {
  t.equal((await node.http('POST', '/banned/', { who: 'alice', as: 'username', reason: 'test' })).status, 200)
  const banned = await connect('alice', 'secret')
  t.match(banned.answer, { event: 'error', headers: { message: 'login refused' }, body: /banned/ })
  t.equal((await node.http('DELETE', '/banned/alice?as=username')).status, 200)
  const again = await connect('alice', 'secret')
  t.equal(again.answer.event, 'connected')
  await again.py.stop()
})
