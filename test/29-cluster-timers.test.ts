// Session-expiry and will-delay timers in a three-node cluster: the timer of
// the node a client left must not expire its session or publish its will once
// the client is back on another node; a client that stays away loses its
// session, and its delayed will is published once, cluster-wide.
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { logsOnFailure, opened, startCluster, track, waitFor, type Tracked } from './helpers/cluster.js'
import { connect, nextMessages } from './helpers/mqtt.js'

const cluster = await startCluster()
t.teardown(cluster.close)
logsOnFailure(t, cluster)
const [n1, n2, n3] = cluster.nodes


const v5 = (clientId: string, expiry: number): { clientId: string, protocolVersion: 5, clean: false, properties: { sessionExpiryInterval: number } } =>
  ({ clientId, protocolVersion: 5, clean: false, properties: { sessionExpiryInterval: expiry } })

t.test('session expiry: back on n2 within 1 s, the n1 timer (2 s) does not end the session', async (t) => {
  const keep = opened(t)
  const first = keep(await track(n1.mqttUrl, v5('exp-back', 2)))
  await first.client.subscribeAsync('exp/back', { qos: 1 })
  await first.client.endAsync()
  await sleep(300)
  const back = keep(await track(n2.mqttUrl, v5('exp-back', 2)))
  t.equal(back.connack.sessionPresent, true, 'the session is there on n2')
  await sleep(3500)
  t.notOk(back.closed, 'still connected')
  const subs = await cluster.api(n3, 'GET', '/subscriptions/exp-back')
  t.match(subs, { status: 200, body: [{ topic: 'exp/back', qos: 1 }] }, 'the subscription is still listed after 3.5 s')
  const pub = keep(await connect(n3.mqttUrl, { clientId: 'exp-back-pub' }))
  await pub.publishAsync('exp/back', 'still subscribed', { qos: 1 })
  await waitFor(() => back.messages.length > 0, 5000, 'a message through the kept subscription')
  t.same(back.messages.map((m) => m.payload), ['still subscribed'])
  // the stored session survived too, not only the live connection's subscription
  await back.client.endAsync()
  const again = keep(await track(n3.mqttUrl, v5('exp-back', 30)))
  t.equal(again.connack.sessionPresent, true, 'the stored session is there on n3')
  await pub.publishAsync('exp/back', 'on n3', { qos: 1 })
  await waitFor(() => again.messages.length > 0, 5000, 'a message on n3')
})

t.test('session expiry: back on n2 within 1 s with a longer expiry, offline again; a message queued meanwhile arrives after the n1 timer passed', async (t) => {
  const keep = opened(t)
  const first = keep(await track(n1.mqttUrl, v5('exp-queue', 2)))
  await first.client.subscribeAsync('exp/queue', { qos: 1 })
  await first.client.endAsync()
  await sleep(300)
  const back = keep(await track(n2.mqttUrl, v5('exp-queue', 30)))
  t.equal(back.connack.sessionPresent, true)
  await back.client.endAsync()
  const pub = keep(await connect(n3.mqttUrl, { clientId: 'exp-queue-pub' }))
  await pub.publishAsync('exp/queue', 'queued meanwhile', { qos: 1 })
  await sleep(3500)
  const again = keep(await track(n3.mqttUrl, v5('exp-queue', 30)))
  t.equal(again.connack.sessionPresent, true, 'the session outlived the n1 timer')
  await waitFor(() => again.messages.length > 0, 5000, 'the queued message')
  await sleep(300)
  t.same(again.messages.map((m) => m.payload), ['queued meanwhile'], 'the queued message, once')
})

t.test('session expiry: a client that does not come back loses its session after the expiry, seen from another node', async (t) => {
  const keep = opened(t)
  const first = keep(await track(n1.mqttUrl, v5('exp-gone', 2)))
  await first.client.subscribeAsync('exp/gone', { qos: 1 })
  await first.client.endAsync()
  const pub = keep(await connect(n2.mqttUrl, { clientId: 'exp-gone-pub' }))
  await pub.publishAsync('exp/gone', 'queued before expiry', { qos: 1 })
  await sleep(1000)
  t.match(await cluster.api(n3, 'GET', '/sessions/exp-gone'), { status: 200 }, 'the session is listed before it expires')
  await sleep(2500)
  const back = keep(await track(n2.mqttUrl, v5('exp-gone', 30)))
  t.equal(back.connack.sessionPresent, false, 'the session expired')
  await sleep(500)
  t.same(back.messages, [], 'its queue went with it')
  await pub.publishAsync('exp/gone', 'after expiry', { qos: 1 })
  await sleep(500)
  t.same(back.messages, [], 'and its subscription')
})

/** A subscriber to `will/#` on every node. */
async function watchers (keep: ReturnType<typeof opened>, tag: string): Promise<Tracked[]> {
  const all: Tracked[] = []
  for (const node of cluster.nodes) {
    const w = keep(await track(node.mqttUrl, { clientId: `watch-${tag}-${node.name}` }))
    await w.client.subscribeAsync(`will/${tag}`, { qos: 1 })
    all.push(w)
  }
  return all
}

function withWill (clientId: string, tag: string): Parameters<typeof track>[1] {
  return {
    ...v5(clientId, 30),
    will: { topic: `will/${tag}`, payload: Buffer.from(`will of ${clientId}`), qos: 1, retain: false, properties: { willDelayInterval: 2 } }
  }
}

t.test('will delay: the client drops from n1 and is back on n2 within 1 s: no will anywhere within 4 s', async (t) => {
  const keep = opened(t)
  const seen = await watchers(keep, 'back')
  const client = keep(await track(n1.mqttUrl, withWill('will-back', 'back')))
  await client.client.subscribeAsync('will-back/own', { qos: 1 })
  client.client.stream.destroy()
  await waitFor(() => client.closed, 2000, 'the socket closed')
  await sleep(300)
  const back = keep(await track(n2.mqttUrl, v5('will-back', 30)))
  t.equal(back.connack.sessionPresent, true, 'the session is back')
  await sleep(4000)
  t.same(seen.map((w) => w.messages.length), [0, 0, 0], 'no will published on any node')
})

t.test('will delay: the client drops from n1 and stays away: its will is published once after ~2 s', async (t) => {
  const keep = opened(t)
  const seen = await watchers(keep, 'gone')
  const client = keep(await track(n1.mqttUrl, withWill('will-gone', 'gone')))
  const dropped = Date.now()
  client.client.stream.destroy()
  await waitFor(() => seen.every((w) => w.messages.length > 0), 8000, 'the will on every node')
  const after = Date.now() - dropped
  t.ok(after >= 1500, `not before the will delay (${after} ms)`)
  await sleep(1500)
  for (const w of seen) t.same(w.messages.map((m) => [m.topic, m.payload]), [['will/gone', 'will of will-gone']], 'one will')
})

t.test('will delay: a will not delayed is published at once when the client drops, once per subscriber', async (t) => {
  const keep = opened(t)
  const seen = await watchers(keep, 'now')
  const client = keep(await track(n3.mqttUrl, { ...v5('will-now', 0), will: { topic: 'will/now', payload: Buffer.from('now'), qos: 1, retain: false } }))
  const got = Promise.all(seen.map(async (w) => await nextMessages(w.client, 1)))
  client.client.stream.destroy()
  await got
  await sleep(500)
  t.same(seen.map((w) => w.messages.length), [1, 1, 1])
})
