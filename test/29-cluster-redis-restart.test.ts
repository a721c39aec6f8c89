// The cluster's redis-server restarted mid-run (stopped, started again on the
// same port and folder). Redis is run the way a cluster should run it:
// `appendonly yes` and `appendfsync always`, so every write it acknowledged is
// on disk. The nodes stay up, recover (membership, cross-node delivery for
// existing and new subscriptions), and nothing acknowledged is lost: a QoS 1
// message queued for an offline persistent session before the restart
// arrives after it, and a retained message set before it is still there.
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { logsOnFailure, startCluster, track, waitFor, type Tracked } from './helpers/cluster.js'
import { closeAll, connect, type MqttClient } from './helpers/mqtt.js'

const cluster = await startCluster({ redisArgs: ['--appendonly', 'yes', '--appendfsync', 'always'] })
t.teardown(cluster.close)
logsOnFailure(t, cluster)
const [n1, n2, n3] = cluster.nodes
const names = cluster.nodes.map((n) => n.name).sort()
const clients: MqttClient[] = []
t.teardown(async () => await closeAll(...clients))
const keep = <C extends MqttClient | Tracked>(c: C): C => {
  clients.push('connack' in c ? c.client : c)
  return c
}
const session = { clientId: 'rr-session', protocolVersion: 5 as const, clean: false, properties: { sessionExpiryInterval: 600 } }

/** Publishes `topic` from `pub` every 500 ms until `sub` has a message; resolves with how many were published. */
async function publishUntilReceived (pub: MqttClient, sub: Tracked, topic: string, timeoutMs: number): Promise<number> {
  let sent = 0
  const deadline = Date.now() + timeoutMs
  while (sub.messages.length === 0 && Date.now() < deadline) {
    await Promise.race([pub.publishAsync(topic, `probe ${sent}`, { qos: 1 }).catch(() => {}), sleep(2000)])
    sent++
    await sleep(500)
  }
  return sent
}

t.test('redis-server restarted mid-run', async (t) => {
  // before: a persistent session with a queued QoS 1 message, a retained message, a live subscriber
  const offline = keep(await track(n1.mqttUrl, session))
  await offline.client.subscribeAsync('rr/queued', { qos: 1 })
  await offline.client.endAsync()
  const pub1 = keep(await connect(n2.mqttUrl, { clientId: 'rr-pub-1' }))
  await pub1.publishAsync('rr/queued', 'acknowledged before the restart', { qos: 1 })
  await pub1.publishAsync('rr/retained', 'retained before the restart', { qos: 1, retain: true })
  const live = keep(await track(n3.mqttUrl, { clientId: 'rr-live' }))
  await live.client.subscribeAsync('rr/live', { qos: 1 })

  await cluster.redis.stop()
  await sleep(500)
  // published while Redis is down: if the node acknowledges it, it must not be lost either
  const during = pub1.publishAsync('rr/queued', 'published during the outage', { qos: 1 }).then(() => true, () => false)
  await sleep(1000)
  await cluster.redis.restart()
  const duringAcked = await Promise.race([during, sleep(10_000).then(() => false)])

  t.test('every node process is still running, and the connected client was kept', async (t) => {
    for (const node of cluster.nodes) t.ok(node.running, `${node.name} runs`, { logs: node.running ? undefined : node.logs().split('\n').slice(-30) })
    t.notOk(live.closed, 'the subscriber on n3 is still connected')
  })

  t.test('membership recovers: every node lists the 3 nodes again', async (t) => {
    for (const node of cluster.nodes) {
      await waitFor(async () => (await cluster.liveNodes(node)).length === 3, 15_000).catch(() => {})
      t.same(await cluster.liveNodes(node), names, `listed by ${node.name}`)
    }
  })

  t.test('a subscription made before the restart gets cross-node deliveries again (n1 → n3), once each', async (t) => {
    const pub = keep(await connect(n1.mqttUrl, { clientId: 'rr-pub-2' }))
    const probes = await publishUntilReceived(pub, live, 'rr/live', 15_000)
    t.ok(live.messages.length > 0, `delivered again (after ${probes} probe(s))`)
    await sleep(500)
    live.messages.length = 0
    await pub.publishAsync('rr/live', 'after recovery', { qos: 1 })
    await waitFor(() => live.messages.length > 0, 5000).catch(() => {})
    await sleep(500)
    t.same(live.messages.map((m) => m.payload), ['after recovery'], 'a new message, exactly once')
  })

  t.test('a new subscription after the restart gets cross-node deliveries (n3 → n2)', async (t) => {
    const sub = keep(await track(n2.mqttUrl, { clientId: 'rr-new-sub' }))
    await sub.client.subscribeAsync('rr/new', { qos: 1 })
    const pub = keep(await connect(n3.mqttUrl, { clientId: 'rr-pub-3' }))
    await pub.publishAsync('rr/new', 'new route', { qos: 1 })
    await waitFor(() => sub.messages.length > 0, 5000).catch(() => {})
    await sleep(300)
    t.same(sub.messages.map((m) => m.payload), ['new route'])
  })

  t.test('the QoS 1 message acknowledged before the restart reaches the persistent session on n3, once', async (t) => {
    const back = keep(await track(n3.mqttUrl, session))
    t.equal(back.connack.sessionPresent, true, 'the session survived the restart')
    await waitFor(() => back.messages.length > 0, 5000).catch(() => {})
    await sleep(500)
    const expected = ['acknowledged before the restart', ...(duringAcked ? ['published during the outage'] : [])]
    t.comment(`the publish made during the outage was ${duringAcked ? '' : 'not '}acknowledged`)
    const got = back.messages.map((m) => m.payload)
    t.same(got.slice(0, expected.length), expected, 'every acknowledged message, in order')
    t.ok(got.length === expected.length || (!duringAcked && got.length === expected.length + 1 && got.at(-1) === 'published during the outage'), `no duplicates: ${JSON.stringify(got)}`)
  })

  t.test('the retained message set before the restart is still there', async (t) => {
    const sub = keep(await track(n1.mqttUrl, { clientId: 'rr-retained' }))
    await sub.client.subscribeAsync('rr/retained', { qos: 1 })
    await waitFor(() => sub.messages.length > 0, 5000).catch(() => {})
    t.same(sub.messages.map((m) => [m.payload, m.retain]), [['retained before the restart', true]])
  })

  t.test('the management API and broker_ctl work across nodes again', async (t) => {
    const conns = await cluster.api(n2, 'GET', '/connections/')
    t.equal(conns.status, 200)
    const ids = (conns.body as { items: Array<{ client_id: string }> }).items.map((c) => c.client_id)
    t.ok(ids.includes('rr-live'), 'a client of n3 listed through n2')
    // a loaded machine may stall a node past its deadline for a moment: what counts is that the status settles
    const status = async (): Promise<unknown> => (await cluster.ctlJson(n1, 'cluster', 'status')).data
    const settled = { running_nodes: names, stopped_nodes: [] }
    await waitFor(async () => JSON.stringify(await status()) === JSON.stringify(settled), 15_000).catch(() => {})
    t.same(await status(), settled)
  })
})

t.test('redis-server killed (-9) and started again: the queued message acknowledged before survives, delivery recovers', async (t) => {
  const options = { ...session, clientId: 'rr-session-kill' }
  const offline = keep(await track(n2.mqttUrl, options))
  await offline.client.subscribeAsync('rr/kill', { qos: 1 })
  await offline.client.endAsync()
  const pub = keep(await connect(n1.mqttUrl, { clientId: 'rr-pub-kill' }))
  await pub.publishAsync('rr/kill', 'acknowledged before the kill', { qos: 1 })
  const live = keep(await track(n2.mqttUrl, { clientId: 'rr-live-kill' }))
  await live.client.subscribeAsync('rr/live-kill', { qos: 1 })

  await cluster.redis.kill()
  await sleep(1000)
  await cluster.redis.restart()

  for (const node of cluster.nodes) t.ok(node.running, `${node.name} runs`, { logs: node.running ? undefined : node.logs().split('\n').slice(-30) })
  const probes = await publishUntilReceived(keep(await connect(n3.mqttUrl, { clientId: 'rr-pub-kill-2' })), live, 'rr/live-kill', 15_000)
  t.ok(live.messages.length > 0, `cross-node delivery recovered (after ${probes} probe(s))`)
  const back = keep(await track(n3.mqttUrl, options))
  t.equal(back.connack.sessionPresent, true, 'the session survived the kill')
  await waitFor(() => back.messages.length > 0, 5000).catch(() => {})
  await sleep(500)
  t.same(back.messages.map((m) => m.payload), ['acknowledged before the kill'])
})
