// Three real nodes on one redis-server act as one broker: messages cross
// nodes at every QoS without duplicates, retained messages are seen from every
// node, a persistent session moves with its client, the same client id on
// another node takes the session over (DISCONNECT 0x8E), and a shared
// subscription group spread over the nodes gets each message exactly once.
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { logsOnFailure, opened, startCluster, track, waitFor, type Tracked } from './helpers/cluster.js'
import { connect, nextMessages, noMessageWithin } from './helpers/mqtt.js'

const cluster = await startCluster()
t.teardown(cluster.close)
logsOnFailure(t, cluster)
const [n1, n2, n3] = cluster.nodes


t.test('cross-node delivery: published on n1, received on n3, QoS 0/1/2, exact payloads, no duplicates', async (t) => {
  const keep = opened(t)
  const sub = keep(await connect(n3.mqttUrl, { clientId: 'x-sub', protocolVersion: 5 }))
  const pub = keep(await connect(n1.mqttUrl, { clientId: 'x-pub', protocolVersion: 5 }))
  await sub.subscribeAsync({ 'x/q0': { qos: 0 }, 'x/q1': { qos: 1 }, 'x/q2': { qos: 2 } })
  const sent: Array<{ topic: string, payload: string, qos: 0 | 1 | 2 }> = []
  for (const qos of [0, 1, 2] as const) {
    for (let i = 0; i < 5; i++) sent.push({ topic: `x/q${qos}`, payload: `q${qos}-${i}-${'é'.repeat(i)}`, qos })
  }
  const got = nextMessages(sub, sent.length, 10_000)
  for (const m of sent) await pub.publishAsync(m.topic, m.payload, { qos: m.qos })
  const received = await got
  for (const qos of [0, 1, 2]) {
    t.same(received.filter((m) => m.topic === `x/q${qos}`).map((m) => [m.payload, m.qos]),
      sent.filter((m) => m.qos === qos).map((m) => [m.payload, qos]), `QoS ${qos}: every payload once, in order, at QoS ${qos}`)
  }
  t.ok(await noMessageWithin(sub, 1000), 'no duplicate afterwards')
})

t.test('cross-node delivery: a subscriber on every node gets one copy of a message published on n2', async (t) => {
  const keep = opened(t)
  const subs = []
  for (const node of [n1, n2, n3]) {
    const sub = keep(await connect(node.mqttUrl, { clientId: `fan-${node.name}` }))
    await sub.subscribeAsync('fan/+', { qos: 1 })
    subs.push(sub)
  }
  const pub = keep(await connect(n2.mqttUrl, { clientId: 'fan-pub' }))
  const got = subs.map(async (s) => await nextMessages(s, 1))
  await pub.publishAsync('fan/a', 'one', { qos: 1 })
  for (const messages of await Promise.all(got)) t.match(messages, [{ topic: 'fan/a', payload: 'one', qos: 1 }])
  for (const sub of subs) t.ok(await noMessageWithin(sub, 300), 'exactly one copy')
})

t.test('retained: set on n2, a new subscriber on n3 gets it; cleared on n1, a subscriber on n2 gets none', async (t) => {
  const keep = opened(t)
  const pub = keep(await connect(n2.mqttUrl, { clientId: 'r-pub' }))
  await pub.publishAsync('ret/a', 'kept on n2', { qos: 1, retain: true })
  const sub = keep(await track(n3.mqttUrl, { clientId: 'r-sub', protocolVersion: 5 }))
  await sub.client.subscribeAsync('ret/#', { qos: 1 })
  await waitFor(() => sub.messages.length === 1, 5000, 'the retained message on n3')
  t.same(sub.messages.map((m) => [m.topic, m.payload, m.retain]), [['ret/a', 'kept on n2', true]])

  const clearer = keep(await connect(n1.mqttUrl, { clientId: 'r-clear' }))
  await clearer.publishAsync('ret/a', '', { qos: 1, retain: true })
  const late = keep(await track(n2.mqttUrl, { clientId: 'r-late' }))
  await late.client.subscribeAsync('ret/#', { qos: 1 })
  await sleep(500)
  t.same(late.messages, [], 'the retained message was cleared cluster-wide')
})

const sessions = [
  ['MQTT 3.1.1 clean=false', { protocolVersion: 4 as const, clean: false }],
  ['MQTT 5 sessionExpiryInterval 300', { protocolVersion: 5 as const, clean: false, properties: { sessionExpiryInterval: 300 } }]
] as const
for (const [name, options] of sessions) {
  t.test(`${name}: a persistent QoS 1 session leaves n1, its messages are published on n2, it comes back on n3 and gets each once, in order`, async (t) => {
    const keep = opened(t)
    const id = `mover-${options.protocolVersion}`
    const topic = `move/${options.protocolVersion}`
    const first = keep(await track(n1.mqttUrl, { ...options, clientId: id }))
    await first.client.subscribeAsync(topic, { qos: 1 })
    await first.client.endAsync()
    const pub = keep(await connect(n2.mqttUrl, { clientId: `${id}-pub` }))
    const payloads = Array.from({ length: 20 }, (_, i) => `m${i}`)
    for (const payload of payloads) await pub.publishAsync(topic, payload, { qos: 1 })

    const back = keep(await track(n3.mqttUrl, { ...options, clientId: id }))
    t.equal(back.connack.sessionPresent, true, 'sessionPresent on n3')
    await waitFor(() => back.messages.length >= payloads.length, 10_000, `${payloads.length} queued messages on n3`)
    await sleep(500)
    t.same(back.messages.map((m) => m.payload), payloads, 'every message exactly once, in order')
    t.ok(back.messages.every((m) => m.topic === topic && m.qos === 1))

    // the session keeps working on n3: a message published on n1 now arrives
    const now = nextMessages(back.client, 1)
    await pub.publishAsync(topic, 'live', { qos: 1 })
    t.match(await now, [{ payload: 'live' }])
    // and it is not also delivered or queued on n1's side: back on n1 nothing is waiting
    await back.client.endAsync()
    const again = keep(await track(n1.mqttUrl, { ...options, clientId: id }))
    t.equal(again.connack.sessionPresent, true)
    await sleep(500)
    t.same(again.messages, [], 'nothing delivered twice')
  })
}

t.test('takeover: the same client id on n2 ends the n1 connection with DISCONNECT 0x8E; the session continues on n2', async (t) => {
  const keep = opened(t)
  const options = { clientId: 'taker', protocolVersion: 5 as const, clean: false, properties: { sessionExpiryInterval: 300 } }
  const old = keep(await track(n1.mqttUrl, options))
  await old.client.subscribeAsync('take/t', { qos: 1 })
  const pub = keep(await connect(n3.mqttUrl, { clientId: 'taker-pub' }))
  await pub.publishAsync('take/t', 'before', { qos: 1 })
  await waitFor(() => old.messages.length === 1, 5000, 'the first message on n1')

  const fresh = keep(await track(n2.mqttUrl, options))
  t.equal(fresh.connack.sessionPresent, true, 'the session was taken over (sessionPresent)')
  await waitFor(() => old.closed, 5000, 'the n1 connection closed')
  t.same(old.disconnects.map((d) => d.reasonCode), [0x8e], 'n1 sent DISCONNECT 0x8E Session taken over')

  await pub.publishAsync('take/t', 'after', { qos: 1 })
  await waitFor(() => fresh.messages.length >= 1, 5000, 'the next message on n2')
  await sleep(500)
  t.same(fresh.messages.map((m) => m.payload), ['after'], 'the subscription moved with the session; one copy')
  t.same(old.messages.map((m) => m.payload), ['before'])
  const n1Connections = (await cluster.api(n1, 'GET', `/nodes/${n1.name}/connections/`)).body as { data: Array<{ clientid: string }> }
  t.notOk(JSON.stringify(n1Connections).includes('"taker"'), 'n1 no longer lists the client')
})

t.test('takeover, MQTT 3.1.1: the n1 connection is closed and the n2 one keeps the session', async (t) => {
  const keep = opened(t)
  const options = { clientId: 'taker-4', protocolVersion: 4 as const, clean: false }
  const old = keep(await track(n1.mqttUrl, options))
  await old.client.subscribeAsync('take4/t', { qos: 1 })
  const fresh = keep(await track(n2.mqttUrl, options))
  t.equal(fresh.connack.sessionPresent, true)
  await waitFor(() => old.closed, 5000, 'the n1 connection closed')
  const pub = keep(await connect(n3.mqttUrl, { clientId: 'taker-4-pub' }))
  await pub.publishAsync('take4/t', 'x', { qos: 1 })
  await waitFor(() => fresh.messages.length >= 1, 5000, 'the message on n2')
  await sleep(300)
  t.same(fresh.messages.map((m) => m.payload), ['x'])
})

t.test('shared subscription $share/g/… with a member on each node: each of 30 QoS 1 messages to exactly one member', async (t) => {
  const keep = opened(t)
  const members: Tracked[] = []
  for (const node of [n1, n2, n3]) {
    const member = keep(await track(node.mqttUrl, { clientId: `share-${node.name}`, protocolVersion: 5 }))
    await member.client.subscribeAsync('$share/g/share/t', { qos: 1 })
    members.push(member)
  }
  const pub = keep(await connect(n1.mqttUrl, { clientId: 'share-pub' }))
  const payloads = Array.from({ length: 30 }, (_, i) => `s${i}`)
  for (const payload of payloads) await pub.publishAsync('share/t', payload, { qos: 1 })
  const total = (): number => members.reduce((n, m) => n + m.messages.length, 0)
  await waitFor(() => total() >= payloads.length, 10_000, '30 deliveries')
  await sleep(1000)
  const all = members.flatMap((m) => m.messages.map((x) => x.payload))
  t.equal(all.length, 30, `30 deliveries in all (per member: ${members.map((m) => m.messages.length).join(', ')})`)
  t.same([...new Set(all)].sort(), [...payloads].sort(), 'each message once')
  t.ok(members.filter((m) => m.messages.length > 0).length > 1, 'more than one member got some')
})
