// Sessions and access control (issue 14 #2, #3, #6; issue 15 #3): a resumed
// session brings back only the subscriptions its client may still have, and
// none of the messages queued for the others; wills are authorized at CONNECT
// and again, as their owner and under the owner's mountpoint, when published
// after a restart; a persistent session is resumed only by its owner; a v5
// resume without a Session Expiry Interval gets its queue. Restarts use real
// processes (SIGTERM, kill -9), the dead-node sweep a Redis cluster.
import { spawn } from 'node:child_process'
import { mkdir, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import mqtt, { type IClientOptions } from 'mqtt'
import { FIXTURE_PLUGINS, RETAINER, spawnBroker, startBroker, tempDir, type BrokerProcess, type StartOptions, type TestBroker } from './helpers/broker.js'
import { enginePersistence } from '../lib/engine/internals.js'
import { startCluster } from './helpers/cluster.js'
import { closeAll, connect, nextMessages, type MqttClient, type Received } from './helpers/mqtt.js'
import { RawClient } from './helpers/raw-client.js'

type Teardown = { teardown: (fn: () => unknown) => void }

async function aclFile (t: Teardown, rules: string[]): Promise<{ dir: string, file: string }> {
  const dir = await tempDir()
  const file = join(dir, 'acl.conf')
  await writeFile(file, rules.join('\n') + '\n')
  t.teardown(async () => await rm(dir, { recursive: true, force: true }))
  return { dir, file }
}

async function brokerWithRules (t: Teardown, rules: string[], settings: Record<string, string> = {}, options: StartOptions = {}): Promise<{ broker: TestBroker, file: string }> {
  const { file } = await aclFile(t, rules)
  const broker = await startBroker({ 'mqtt.acl_file': file, 'mqtt.acl_nomatch': 'deny', ...settings }, ['tcp'], undefined, options)
  t.teardown(async () => await broker.stop())
  return { broker, file }
}

function opened (t: Teardown) {
  return async (port: number, options: IClientOptions): Promise<MqttClient> => {
    const client = await connect(`mqtt://127.0.0.1:${port}`, options)
    t.teardown(async () => await closeAll(client))
    return client
  }
}

/** Publishes `marker` last and resolves with what `client` receives up to it (its topic included). */
async function receivedUntil (client: MqttClient, publisher: MqttClient, marker: string, timeoutMs = 10_000): Promise<string[]> {
  const got: string[] = []
  const done = new Promise<string[]>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${marker} within ${timeoutMs} ms; got ${got.join(', ')}`)), timeoutMs)
    client.on('message', (topic) => {
      got.push(topic)
      if (topic === marker) {
        clearTimeout(timer)
        resolve(got)
      }
    })
  })
  await publisher.publishAsync(marker, 'end', { qos: 1 })
  return await done
}

/** Records the topics a client receives; `seen(topic)` resolves once that topic has arrived. */
function recorder (client: MqttClient, timeoutMs = 15_000): { topics: string[], seen: (topic: string) => Promise<void> } {
  const topics: string[] = []
  const waiting = new Map<string, () => void>()
  client.on('message', (topic) => {
    topics.push(topic)
    waiting.get(topic)?.()
  })
  return {
    topics,
    seen: async (topic) => {
      if (topics.includes(topic)) return
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no ${topic} within ${timeoutMs} ms; got ${topics.join(', ')}`)), timeoutMs)
        waiting.set(topic, () => { clearTimeout(timer); resolve() })
      })
    }
  }
}

/** Connects with a recorder listening before the CONNACK: a resumed session's queue follows it at once. */
async function resume (t: Teardown, port: number | string, options: IClientOptions): Promise<{ client: MqttClient, topics: string[], seen: (topic: string) => Promise<void> }> {
  const client = mqtt.connect(typeof port === 'string' ? port : `mqtt://127.0.0.1:${port}`, { reconnectPeriod: 0, connectTimeout: 5000, ...options })
  t.teardown(async () => await closeAll(client))
  const recorded = recorder(client)
  await new Promise<void>((resolve, reject) => {
    client.once('connect', () => resolve())
    client.once('error', reject)
  })
  return { client, ...recorded }
}

/** A CONNECT answered: 3.x return code or v5 reason code. */
async function connackCode (port: number, version: 4 | 5, fields: Record<string, unknown>): Promise<number> {
  const raw = await RawClient.open(port, version)
  try {
    const connack = await raw.connect(fields)
    return (version === 5 ? connack.reasonCode : connack.returnCode) ?? 0
  } finally {
    raw.end()
  }
}

function mosquittoSub (port: number, args: string[]): Promise<{ code: number | string, stdout: string, stderr: string }> {
  const child = spawn('mosquitto_sub', ['-h', '127.0.0.1', '-p', String(port), ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
    child.once('close', (code, signal) => {
      clearTimeout(timer)
      resolve({ code: code ?? signal ?? -1, stdout, stderr })
    })
  })
}

const SUBSCRIBE_OK_ONLY = [
  '{allow, all, subscribe, ["ok/#"]}.',
  '{allow, all, publish, ["#"]}.',
  '{deny, all}.'
]

t.test('14 #2: a filter SUBACK refused is not stored; mosquitto_sub -c gets only what it was granted', async (t) => {
  const { broker } = await brokerWithRules(t, SUBSCRIBE_OK_ONLY)
  const port = broker.port()
  const first = await mosquittoSub(port, ['-V', 'mqttv311', '-c', '-i', 'X', '-q', '1', '-t', 'ok/x', '-t', 'secret/#', '-t', '#', '-E'])
  t.equal(first.code, 0, `mosquitto_sub -E subscribed and left: ${first.stderr}`)
  const publisher = await opened(t)(port, { clientId: 'pub' })
  // queued while X is away, in this order
  await publisher.publishAsync('secret/plans', 'leak', { qos: 1 })
  await publisher.publishAsync('ok/x', 'fine', { qos: 1 })
  const resumed = await mosquittoSub(port, ['-V', 'mqttv311', '-c', '-i', 'X', '-q', '1', '-t', 'ok/x', '-v', '-C', '1', '-W', '10'])
  t.equal(resumed.stdout.trim(), 'ok/x fine', 'the first message the resumed session gets is the granted one; secret/plans was never queued')

  // live: the restored session holds ok/x and nothing else
  const x = await opened(t)(port, { clientId: 'X', clean: false })
  t.same(await receivedUntil(x, publisher, 'ok/x'), ['ok/x'], 'nothing on secret/# or # reaches X')
  await publisher.publishAsync('secret/more', 'leak', { qos: 1 })
  t.same(await receivedUntil(x, publisher, 'ok/x'), ['ok/x'], 'still nothing on secret/#')
})

t.test('14 #2: rights withdrawn while the client was away: its filter and the messages queued for it are dropped on resume', async (t) => {
  const rules = ['{allow, all, subscribe, ["team/#", "mine/#"]}.', '{allow, all, publish, ["#"]}.', '{deny, all}.']
  const { broker, file } = await brokerWithRules(t, rules)
  const port = broker.port()
  const open = opened(t)
  const alice = await open(port, { clientId: 'alice-1', username: 'alice', clean: false })
  const granted = await alice.subscribeAsync(['team/#', 'mine/#'], { qos: 1 })
  t.same(granted.map((g) => g.qos), [1, 1], 'both granted while allowed')
  await alice.endAsync()
  await writeFile(file, ['{allow, all, subscribe, ["mine/#"]}.', '{allow, all, publish, ["#"]}.', '{deny, all}.'].join('\n') + '\n')
  await broker.node.access.reload()
  const publisher = await open(port, { clientId: 'pub' })
  // queued in this order: when mine/a has come, team/secret was decided
  await publisher.publishAsync('team/secret', 'queued before', { qos: 1 })
  await publisher.publishAsync('mine/a', 'mine', { qos: 1 })
  const back = await resume(t, port, { clientId: 'alice-1', username: 'alice', clean: false })
  await back.seen('mine/a')
  t.same(back.topics, ['mine/a'], 'the queued team/secret is not delivered; mine/a is')
  await publisher.publishAsync('team/live', 'live', { qos: 1 })
  t.same(await receivedUntil(back.client, publisher, 'mine/end'), ['mine/end'], 'nor a live team/ message')
  await back.client.endAsync()
  // the filter is gone from the stored session, not only from that connection
  await writeFile(file, rules.join('\n') + '\n')
  await broker.node.access.reload()
  await publisher.publishAsync('team/later', 'after', { qos: 1 })
  await publisher.publishAsync('mine/b', 'after', { qos: 1 })
  const again = await resume(t, port, { clientId: 'alice-1', username: 'alice', clean: false })
  await again.seen('mine/b')
  t.same(again.topics, ['mine/b'], 'team/# was removed from the session: nothing was queued for it')
})

t.test('14 #3: a will on a topic the client may not publish, or on $SYS, is refused at CONNECT', async (t) => {
  const { broker } = await brokerWithRules(t, ['{allow, {user, "dev"}, publish, ["dev/#"]}.', '{allow, all, subscribe, ["#"]}.', '{deny, all}.'], {}, {
    pluginDirs: [FIXTURE_PLUGINS], plugins: { broker_fixture_a: { 'fixture.auth': 'superuser', 'fixture.users': 'root' }, [RETAINER]: {} }
  })
  const port = broker.port()
  const will = (topic: string) => ({ topic, payload: Buffer.from('gone'), qos: 1 as const, retain: true })
  t.equal(await connackCode(port, 4, { clientId: 'w1', username: 'dev', will: will('ops/cmd') }), 5, '3.1.1: return code 5 (not authorized)')
  t.equal(await connackCode(port, 5, { clientId: 'w2', username: 'dev', will: will('ops/cmd') }), 0x87, 'v5: 0x87 (not authorized)')
  t.equal(await connackCode(port, 5, { clientId: 'w3', username: 'root', will: will('$SYS/brokers/x/clients') }), 0x87, '$SYS: refused even to a superuser')
  t.equal(await connackCode(port, 4, { clientId: 'w4', username: 'dev', will: will('dev/status') }), 0, 'an allowed will is accepted')
  t.equal(await connackCode(port, 4, { clientId: 'w5', username: 'root', will: will('root/cmd') }), 0, 'a superuser may leave a will anywhere but $SYS')
  // the accepted wills were published (retained) when their connections dropped
  const watcher = await opened(t)(port, { clientId: 'watch', username: 'watch' })
  const got = nextMessages(watcher, 2)
  await watcher.subscribeAsync(['dev/#', 'ops/#', 'root/#'], { qos: 1 })
  t.same((await got).map((m) => m.topic).sort(), ['dev/status', 'root/cmd'], 'the accepted wills are published')
  // what a SUBSCRIBE would get: the retainer's messages and the node's own $SYS ones
  const retained: string[] = []
  const stored = enginePersistence<{ createRetainedStreamCombi: (filters: string[]) => AsyncIterable<{ topic: string }> }>(broker.node.engine).createRetainedStreamCombi(['#', '$SYS/#'])
  for await (const packet of stored) retained.push(packet.topic)
  t.ok(retained.includes('dev/status') && retained.includes('root/cmd'), 'the accepted wills are retained')
  t.notOk(retained.includes('ops/cmd'), 'no will of a refused CONNECT is retained on ops/cmd')
  t.notOk(retained.includes('$SYS/brokers/x/clients'), 'nor on $SYS')
})

t.test('14 #6: a persistent session is resumed only by its owner (or a superuser); the others are refused, nothing is lost', async (t) => {
  const rules = ['{allow, {user, "alice"}, subscribe, ["alice/#"]}.', '{allow, all, publish, ["#"]}.', '{deny, all}.']
  const { broker } = await brokerWithRules(t, rules, {}, {
    pluginDirs: [FIXTURE_PLUGINS], plugins: { broker_fixture_a: { 'fixture.auth': 'superuser', 'fixture.users': 'root' } }
  })
  const port = broker.port()
  const open = opened(t)
  const alice = await open(port, { clientId: 'phone', username: 'alice', clean: false })
  await alice.subscribeAsync('alice/#', { qos: 1 })
  await alice.endAsync()
  const publisher = await open(port, { clientId: 'pub' })
  await publisher.publishAsync('alice/inbox', 'for alice', { qos: 1 })
  t.equal(await connackCode(port, 4, { clientId: 'phone', username: 'eve', clean: false }), 5, '3.1.1: eve resuming alice\'s session: return code 5')
  t.equal(await connackCode(port, 5, { clientId: 'phone', username: 'eve', clean: false, properties: { sessionExpiryInterval: 60 } }), 0x87, 'v5: 0x87')
  const back = await resume(t, port, { clientId: 'phone', username: 'alice', clean: false })
  await back.seen('alice/inbox')
  t.same(await receivedUntil(back.client, publisher, 'alice/end'), ['alice/end'], 'alice gets her queued message and her live ones')
  await back.client.endAsync()
  const root = await open(port, { clientId: 'phone', username: 'root', clean: false })
  t.ok(root.connected, 'a superuser may resume it')
  await root.endAsync()
  const again = await open(port, { clientId: 'phone', username: 'alice', clean: false })
  t.ok(again.connected, 'and alice still owns it')
})

t.test('14 #6 with mqtt.session_owner_check = off: the resumed session keeps only what the new user may read', async (t) => {
  const rules = ['{allow, {user, "alice"}, subscribe, ["alice/#"]}.', '{allow, all, subscribe, ["public/#"]}.', '{allow, all, publish, ["#"]}.', '{deny, all}.']
  const { broker } = await brokerWithRules(t, rules, { 'mqtt.session_owner_check': 'off' })
  const port = broker.port()
  const open = opened(t)
  const alice = await open(port, { clientId: 'phone', username: 'alice', clean: false })
  await alice.subscribeAsync(['alice/#', 'public/#'], { qos: 1 })
  await alice.endAsync()
  const publisher = await open(port, { clientId: 'pub' })
  await publisher.publishAsync('alice/inbox', 'for alice', { qos: 1 })
  await publisher.publishAsync('public/news', 'for all', { qos: 1 })
  const eve = await resume(t, port, { clientId: 'phone', username: 'eve', clean: false })
  await eve.seen('public/news')
  await publisher.publishAsync('alice/live', 'for alice', { qos: 1 })
  t.same(await receivedUntil(eve.client, publisher, 'public/end'), ['public/end'], 'eve gets neither alice\'s queued nor her live messages')
})

t.test('15 #3: a v5 resume without Session Expiry Interval gets the queued messages, expired ones excepted', async (t) => {
  const { broker } = await brokerWithRules(t, ['{allow, all}.'])
  const port = broker.port()
  const open = opened(t)
  const sub = await open(port, { clientId: 'v5sub', protocolVersion: 5, clean: false, properties: { sessionExpiryInterval: 300 } })
  await sub.subscribeAsync('q/#', { qos: 2 })
  await sub.endAsync()
  const publisher = await open(port, { clientId: 'pub', protocolVersion: 5 })
  await publisher.publishAsync('q/short', 'expires', { qos: 1, properties: { messageExpiryInterval: 1 } })
  await publisher.publishAsync('q/one', 'a', { qos: 1, properties: { messageExpiryInterval: 300 } })
  await publisher.publishAsync('q/two', 'b', { qos: 2 })
  // the first message's lifetime passes while the client is away
  await new Promise((resolve) => setTimeout(resolve, 1500))
  const back = await open(port, { clientId: 'v5sub', protocolVersion: 5, clean: false })
  const got: Received[] = await nextMessages(back, 2, 10_000)
  t.same(got.map((m) => [m.topic, m.payload, m.qos]), [['q/one', 'a', 1], ['q/two', 'b', 2]], 'QoS 1 and 2 delivered, the expired one not')
  const remaining = got[0].properties?.messageExpiryInterval as number
  t.ok(remaining > 0 && remaining <= 300, `the remaining expiry interval is carried (${remaining})`)
})

t.test('after a restart: the owner check holds, withdrawn rights drop restored filters, and delayed wills are authorized as their owner under its mountpoint', async (t) => {
  const { dir, file } = await aclFile(t, [
    '{allow, all, subscribe, ["#"]}.',
    '{allow, all, publish, ["#"]}.'
  ])
  const settings = { 'mqtt.acl_file': file, 'mqtt.acl_nomatch': 'deny', 'zone.external.mountpoint': 'tenant/' }
  const dataDir = join(dir, 'data')
  await mkdir(dataDir)
  let node: BrokerProcess = await spawnBroker(dataDir, settings)
  t.teardown(() => { node.child.kill('SIGKILL') })
  const port = node.port
  const url = `mqtt://127.0.0.1:${port}`
  const v5Will = (topic: string): IClientOptions => ({
    protocolVersion: 5,
    clean: false,
    properties: { sessionExpiryInterval: 600 },
    will: { topic, payload: Buffer.from('down'), qos: 1, retain: false, properties: { willDelayInterval: 1 } }
  })
  const watcher = await connect(url, { clientId: 'watcher', username: 'ops', clean: false })
  await watcher.subscribeAsync(['dev/#', 'ops/#'], { qos: 1 })
  await watcher.endAsync()
  const alice = await connect(url, { clientId: 'alice-phone', username: 'alice', clean: false })
  await alice.subscribeAsync(['team/#', 'alice/#'], { qos: 1 })
  await alice.endAsync()
  // two devices whose wills are accepted now; they are still connected when the node stops
  const devA = await connect(url, { clientId: 'dev-a', username: 'dev', ...v5Will('dev/a') })
  const devB = await connect(url, { clientId: 'dev-b', username: 'dev', ...v5Will('ops/b') })
  node.child.kill('SIGTERM')
  t.equal(await node.exited, 0, 'a clean stop')
  await closeAll(devA, devB)
  // while the node is down, users may no longer publish to ops/# nor read team/#
  await writeFile(file, [
    '{deny, all, publish, ["ops/#"]}.',
    '{deny, all, subscribe, ["team/#"]}.',
    '{allow, all, subscribe, ["#"]}.',
    '{allow, all, publish, ["#"]}.'
  ].join('\n') + '\n')
  node = await spawnBroker(dataDir, settings, port)

  t.equal(await connackCode(port, 4, { clientId: 'alice-phone', username: 'eve', clean: false }), 5, 'eve may not resume alice\'s session after the restart')

  const publisher = await connect(url, { clientId: 'pub', username: 'ops' })
  t.teardown(async () => await closeAll(publisher))
  // queued for alice in this order
  await publisher.publishAsync('team/x', 'secret', { qos: 1 })
  await publisher.publishAsync('alice/q', 'hers', { qos: 1 })
  // listening before the CONNACK: the queued wills follow it at once
  const watched = await resume(t, port, { clientId: 'watcher', username: 'ops', clean: false })
  const back = watched.client
  // both wills are restored at once: when dev/a's has come, ops/b's was decided too
  await watched.seen('dev/a')
  await publisher.publishAsync('dev/end', 'end', { qos: 1 })
  await watched.seen('dev/end')
  t.ok(watched.topics.includes('dev/a'), 'dev/a\'s will is published under the mountpoint (a client of tenant/ sees dev/a)')
  t.notOk(watched.topics.includes('ops/b'), 'ops/b\'s will, now denied to its owner, is not published')
  await closeAll(back)

  const aliceBack = await resume(t, port, { clientId: 'alice-phone', username: 'alice', clean: false })
  await aliceBack.seen('alice/q')
  t.same(aliceBack.topics, ['alice/q'], 'alice\'s team/# was dropped on resume: the queued team/x is not delivered, alice/q is')
  await closeAll(aliceBack.client, publisher)

  // kill -9 and start again: the owner record and the dropped filter were on disk
  node.child.kill('SIGKILL')
  await node.exited
  node = await spawnBroker(dataDir, settings, port)
  t.equal(await connackCode(port, 5, { clientId: 'alice-phone', username: 'eve', clean: false, properties: { sessionExpiryInterval: 60 } }), 0x87, 'after kill -9, eve is still refused (v5 0x87)')
  const pub2 = await connect(url, { clientId: 'pub2', username: 'ops' })
  t.teardown(async () => await closeAll(pub2))
  await pub2.publishAsync('team/y', 'secret', { qos: 1 })
  await pub2.publishAsync('alice/r', 'hers', { qos: 1 })
  const aliceAgain = await resume(t, port, { clientId: 'alice-phone', username: 'alice', clean: false })
  await aliceAgain.seen('alice/r')
  // QoS 1 is at least once: alice/q, acknowledged just before the kill -9, may come again if the store had
  // not yet dropped it; what must hold is that team/y (no longer allowed) never comes and alice/r does
  t.same(aliceAgain.topics.filter((topic) => topic !== 'alice/q'), ['alice/r'], 'after kill -9 alice\'s session still has alice/# and not team/#')
  node.child.kill('SIGKILL')
  await node.exited
})

t.test('14 #3 in a cluster: a dead node\'s wills are swept as their owners, with the ACL in force now', async (t) => {
  const { file } = await aclFile(t, ['{allow, all}.'])
  const cluster = await startCluster({ size: 2, heartbeat: '500ms', settings: { 'mqtt.acl_file': file } })
  t.teardown(cluster.close)
  const [n1, n2] = cluster.nodes
  const open = async (url: string, options: IClientOptions): Promise<MqttClient> => {
    const client = await connect(url, options)
    t.teardown(async () => await closeAll(client))
    return client
  }
  const watcher = await resume(t, n1.mqttUrl, { clientId: 'sweep-watch' })
  await watcher.client.subscribeAsync('sweep/#', { qos: 1 })
  for (const topic of ['sweep/allowed', 'sweep/denied']) {
    await open(n2.mqttUrl, { clientId: topic.replace('/', '-'), username: 'dev', will: { topic, payload: Buffer.from('gone'), qos: 1, retain: false } })
  }
  // both wills were accepted; now their owner may no longer publish one of them
  await writeFile(file, '{deny, {user, "dev"}, publish, ["sweep/denied"]}.\n{allow, all}.\n')
  t.equal((await cluster.ctl(n1, 'acl', 'reload')).code, 0, 'ACL reloaded on every node')
  await cluster.kill9(n2)
  await watcher.seen('sweep/allowed')
  const publisher = await open(n1.mqttUrl, { clientId: 'sweep-pub' })
  await publisher.publishAsync('sweep/end', 'end', { qos: 1 })
  await watcher.seen('sweep/end')
  t.notOk(watcher.topics.includes('sweep/denied'), 'the will its owner may no longer publish is dropped')
})
