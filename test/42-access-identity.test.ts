// Who a client is, for access (issue 14 #4, #5, #8, #11), with real clients:
// %c / %u in ACL rules and mountpoints cannot be filled with wildcards or
// extra levels, a backend's stored user name is the one rules and bans see,
// and a client id registered with broker_auth_clientid is admitted only by
// its own password.
import { rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { IAuthPacket, IConnackPacket, ISubackPacket } from 'mqtt-packet'
import type { BannedEntry } from '../lib/access/banned.js'
import { FIXTURE_PLUGINS, startBroker, tempDir, type StartOptions, type TestBroker } from './helpers/broker.js'
import { closeAll, connect, nextMessages, noMessageWithin } from './helpers/mqtt.js'
import { RawClient } from './helpers/raw-client.js'
import { connackCode } from './helpers/servers/outcome.js'
import { ScramClient } from './helpers/scram-client.js'

async function brokerWithRules (t: Test, rules: string, settings: Record<string, string> = {}, options: StartOptions = {}): Promise<TestBroker> {
  const dir = await tempDir()
  const file = join(dir, 'acl.conf')
  await writeFile(file, rules)
  const broker = await startBroker({ 'mqtt.acl_file': file, 'mqtt.acl_nomatch': 'deny', ...settings }, ['tcp'], undefined, options)
  t.teardown(async () => { await broker.stop(); await rm(dir, { recursive: true, force: true }) })
  return broker
}

/** The CONNACK code (3.x return code or MQTT 5 reason code) a real client gets. */
async function connack (broker: TestBroker, protocolVersion: 4 | 5, fields: { clientId: string, username?: string, password?: string }): Promise<number> {
  return await connackCode(broker.port(), { protocolVersion, ...fields })
}

/** The SUBACK codes one SUBSCRIBE gets. */
async function granted (broker: TestBroker, fields: { clientId: string, username?: string }, filters: string[]): Promise<number[]> {
  const raw = await RawClient.open(broker.port(), 4)
  try {
    const ack = await raw.connect(fields)
    if (ack.returnCode !== 0) throw new Error(`${fields.clientId}: CONNACK ${ack.returnCode}`)
    raw.send({ cmd: 'subscribe', messageId: 1, subscriptions: filters.map((topic) => ({ topic, qos: 1 as const })) })
    return (await raw.next('suback') as ISubackPacket).granted as number[]
  } finally {
    raw.end()
  }
}

t.test('#4 %c / %u in acl.conf: a client id or user name + or # does not become a wildcard', async (t) => {
  const broker = await brokerWithRules(t, [
    '{allow, all, subscribe, ["clients/%c/#"]}.',
    '{allow, all, subscribe, ["users/%u/#"]}.',
    '{deny, all}.'
  ].join('\n'))
  t.same(await granted(broker, { clientId: '+' }, ['clients/+/#']), [0x80], 'client id + does not read every client\'s tree')
  t.same(await granted(broker, { clientId: '#' }, ['clients/#']), [0x80], 'client id # does not read everything below clients/')
  t.same(await granted(broker, { clientId: 'u-1', username: '#' }, ['users/#']), [0x80], 'user name # does not read every user\'s tree')
  t.same(await granted(broker, { clientId: 'u-2', username: 'a/b' }, ['users/a/b/#']), [0x80], 'a user name with / is not several levels')
  t.same(await granted(broker, { clientId: 'dev-1', username: 'alice' }, ['clients/dev-1/#', 'users/alice/x', 'clients/dev-2/#']), [1, 1, 0x80],
    'the legitimate client still gets its own trees')
})

t.test('#5 mountpoint %c: a client id with +, # or / is refused; others are copied literally', async (t) => {
  const broker = await brokerWithRules(t, '{allow, all}.\n', { 'zone.external.mountpoint': 'tenants/%c/' })
  t.equal(await connack(broker, 5, { clientId: '+' }), 0x85, 'MQTT 5: client id + refused with 0x85')
  t.equal(await connack(broker, 4, { clientId: '+' }), 2, 'MQTT 3.1.1: identifier rejected')
  t.equal(await connack(broker, 5, { clientId: 'victim/cmd' }), 0x85, 'a client id that would write into another tenant')
  t.equal(await connack(broker, 4, { clientId: 'a#' }), 2)

  const url = `mqtt://127.0.0.1:${broker.port()}`
  // "$`" used as a String.replace pattern turned tenants/%c/ into tenants/tenants//
  const neighbour = await connect(url, { clientId: 'tenants' })
  const odd = await connect(url, { clientId: '$`' })
  const legit = await connect(url, { clientId: 'dev-1' })
  t.teardown(() => closeAll(neighbour, odd, legit))
  await neighbour.subscribeAsync('/#')
  await odd.subscribeAsync('t')
  await legit.subscribeAsync('t')
  const own = nextMessages(odd, 1)
  const quiet = noMessageWithin(neighbour, 500)
  await odd.publishAsync('t', 'mine', { qos: 1 })
  t.same((await own).map((m) => [m.topic, m.payload]), [['t', 'mine']], 'a client id with $` still gets its own messages')
  t.equal(broker.node.service.client('$`')?.mountpoint, 'tenants/$`/', 'its mountpoint holds the client id as it is')
  t.ok(await quiet, 'and they do not land in client "tenants"\' tree')
  const legitOwn = nextMessages(legit, 1)
  await legit.publishAsync('t', 'hello', { qos: 1 })
  t.same((await legitOwn).map((m) => m.payload), ['hello'], 'an ordinary client works as before')
})

t.test('#5 mountpoint %u: a user name with +, # or /, or none, is refused', async (t) => {
  const broker = await brokerWithRules(t, '{allow, all}.\n', { 'zone.external.mountpoint': 'tenants/%u/' })
  t.equal(await connack(broker, 5, { clientId: 'c1', username: '+' }), 0x86, 'MQTT 5: 0x86 bad user name or password')
  t.equal(await connack(broker, 4, { clientId: 'c2', username: 'victim/cmd' }), 4, 'MQTT 3.1.1: 4 bad user name or password')
  t.equal(await connack(broker, 5, { clientId: 'c3' }), 0x86, 'no user name: no tenant to put it in')
  t.equal(await connack(broker, 4, { clientId: 'c4', username: "$'" }), 0, "$' is an ordinary user name")
  t.equal(await connack(broker, 5, { clientId: 'c5', username: 'alice' }), 0, 'alice is admitted')
  const alice = await connect(`mqtt://127.0.0.1:${broker.port()}`, { clientId: 'c6', username: 'alice' })
  t.teardown(() => closeAll(alice))
  t.equal(broker.node.service.client('c6')?.mountpoint, 'tenants/alice/')
})

const now = (): number => Math.floor(Date.now() / 1000)
const ban = (who: string): BannedEntry => ({ who, as: 'username', reason: 'test', desc: '', by: 'tests', until: now() + 600 })

t.test('#8 the backend\'s spelling of the user name is the one rules, bans, mountpoints and listings see', async (t) => {
  const broker = await brokerWithRules(t, '{deny, {user, "alice"}, subscribe, ["secret/#"]}.\n{allow, all}.\n',
    { 'mqtt.allow_anonymous': 'false', 'zone.external.mountpoint': 'tenants/%u/' },
    { pluginDirs: [FIXTURE_PLUGINS], plugins: { broker_fixture_a: { 'fixture.auth': 'allow', 'fixture.users': 'alice,mallory', 'fixture.fold_names': 'true' } } })
  await broker.node.banned.add(ban('mallory'))
  t.equal(await connack(broker, 5, { clientId: 'm1', username: 'MALLORY' }), 0x8a, 'a ban on mallory refuses MALLORY')
  t.equal(await connack(broker, 4, { clientId: 'm2', username: 'mallory ' }), 5, 'and "mallory "')

  t.same(await granted(broker, { clientId: 'a1', username: 'ALICE' }, ['secret/x', 'open/x']), [0x80, 1], 'the rule for alice applies to ALICE')
  t.same(await granted(broker, { clientId: 'a2', username: 'alice ' }, ['secret/x']), [0x80], 'and to "alice "')

  const url = `mqtt://127.0.0.1:${broker.port()}`
  const upper = await connect(url, { clientId: 'a3', username: 'ALICE' })
  const plain = await connect(url, { clientId: 'a4', username: 'alice' })
  t.teardown(() => closeAll(upper, plain))
  t.equal(broker.node.service.connection('a3')[0]?.username, 'alice', 'listed as alice')
  t.equal(broker.node.service.client('a3')?.mountpoint, 'tenants/alice/', 'mounted in alice\'s tenant, not ALICE\'s')
  await plain.subscribeAsync('inbox')
  const got = nextMessages(plain, 1)
  await upper.publishAsync('inbox', 'same tenant', { qos: 1 })
  t.same((await got).map((m) => m.payload), ['same tenant'], 'what ALICE publishes reaches alice\'s tenant')
})

async function scramConnack (broker: TestBroker, clientId: string, user: string, password: string): Promise<number> {
  const raw = await RawClient.open(broker.port(), 5)
  try {
    const scram = new ScramClient(user, password)
    raw.send({
      cmd: 'connect', protocolId: 'MQTT', protocolVersion: 5, clean: true, keepalive: 60, clientId,
      properties: { authenticationMethod: 'SCRAM-SHA-256', authenticationData: scram.first() }
    })
    const challenge = await raw.next(['auth', 'connack'])
    if (challenge.cmd === 'connack') return (challenge as IConnackPacket).reasonCode ?? -1
    const serverFirst = (challenge as IAuthPacket).properties!.authenticationData!
    raw.send({ cmd: 'auth', reasonCode: 0x18, properties: { authenticationMethod: 'SCRAM-SHA-256', authenticationData: await scram.final(serverFirst) } })
    return (await raw.next('connack') as IConnackPacket).reasonCode ?? -1
  } finally {
    raw.end()
  }
}

t.test('#11 a client id registered with broker_auth_clientid is admitted only by its own password', async (t) => {
  const broker = await startBroker({ 'mqtt.allow_anonymous': 'false' }, ['tcp'], undefined, {
    plugins: {
      broker_auth_username: { 'auth.user.1.username': 'alice', 'auth.user.1.password': 'alice-pw' },
      broker_auth_clientid: { 'auth.client.1.clientid': 'dev-3', 'auth.client.1.password': 's3cret' }
    }
  })
  t.teardown(() => broker.stop())
  t.equal(await connack(broker, 4, { clientId: 'dev-3', username: 'alice', password: 'alice-pw' }), 4,
    'a broker_auth_username user cannot take the client id (MQTT 3.1.1: 4)')
  t.equal(await connack(broker, 5, { clientId: 'dev-3', username: 'alice', password: 'alice-pw' }), 0x86, 'MQTT 5: 0x86')
  t.equal(await scramConnack(broker, 'dev-3', 'alice', 'alice-pw'), 0x86, 'nor through SCRAM, which carries no password')
  t.equal(await connack(broker, 4, { clientId: 'dev-3', username: 'anyone', password: 's3cret' }), 0, 'its own password admits it')
  t.equal(await connack(broker, 5, { clientId: 'alice-phone', username: 'alice', password: 'alice-pw' }), 0, 'alice still connects with another client id')
  t.equal(await scramConnack(broker, 'alice-laptop', 'alice', 'alice-pw'), 0, 'and through SCRAM')
})
