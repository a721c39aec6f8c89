// The cluster's redis-server stopped and started again (no Sentinel) under
// QoS 1 load: publishers on n2 send to a subscriber on n2 (local traffic) and
// one on n1 (across the bus). While Redis is down each node raises the alarm
// cluster_redis_unreachable (its $SYS alert is seen on each node), n2 keeps
// acknowledging and delivering its own traffic, its messages for n1 queued
// (cluster.bus.window of them, then its publishers wait), and the management
// API answers 503 store_unavailable at once (its logins are kept in Redis;
// it shows the alarm in each node's history afterwards); when Redis is back
// the alarm is cleared, the queued messages cross, and every acknowledged
// message reaches both subscribers. Twice: a short outage, and one longer than
// the bus's reconnect grace (10 s) and ioredis' retries of a command (~21 s).
// The outage, the longest time without a PUBACK and how soon the queued
// messages crossed are reported.
import type { MqttClient } from 'mqtt'
import t, { type Test } from 'tap'
import { logsOnFailure, startCluster, track, waitFor, type ClusterNode } from './helpers/cluster.js'
import { closeAll } from './helpers/mqtt.js'
import { qos1Load } from './helpers/qos1-load.js'

const PUBLISHERS = 4
/** PUBACKs before Redis stops, while it is down, and after it is back, before the load stops */
const ACKS_BEFORE = 100
const ACKS_DURING = 100
const ACKS_AFTER = 100
/** cluster.bus.window: small, so that a long outage reaches it */
const WINDOW = 300
/** past the bus's reconnect grace (10 s) and ioredis' retries of a command (100 ms … 2 s, 20 times: 21 s) */
const LONG_OUTAGE_MS = 25_000
const ALARM = 'cluster_redis_unreachable'

const cluster = await startCluster({ size: 2, redisArgs: ['--appendonly', 'yes', '--appendfsync', 'always'], settings: { 'cluster.bus.window': WINDOW } })
t.teardown(cluster.close)
logsOnFailure(t, cluster)
const [n1, n2] = cluster.nodes
const clients: MqttClient[] = []
t.teardown(async () => await closeAll(...clients))

/** The ids of the node's present alarms (or its cleared ones), asked of the node itself. */
async function alarmsOf (node: ClusterNode, which: '' | 'history/' = ''): Promise<string[]> {
  const answer = await cluster.api(node, 'GET', `/alarms/${which}${encodeURIComponent(node.name)}`)
  if (answer.status !== 200) throw new Error(`GET /alarms/${which}${node.name}: ${answer.status} ${JSON.stringify(answer.body)}`)
  return (answer.body as Array<{ id: string }>).map((alarm) => alarm.id)
}

const watchers = await Promise.all(cluster.nodes.map(async (node) => {
  const watcher = await track(node.mqttUrl, { clientId: `ro-alarms-${node.name}` })
  clients.push(watcher.client)
  // when each alarm message came (the order of watcher.messages)
  const times: number[] = []
  watcher.client.on('message', () => times.push(Date.now()))
  await watcher.client.subscribeAsync(`$SYS/brokers/${node.name}/alarms/${ALARM}/#`, { qos: 0 })
  return { ...watcher, times }
}))

/** Stops Redis under load; `restartWhen` says when to start it again (given when it stopped). */
async function outage (t: Test, name: string, restartWhen: (stoppedAt: number, ackedSince: (at: number) => number) => boolean): Promise<void> {
  const alarmsFrom = watchers.map((w) => w.messages.length)
  const alarmTopics = (i: number): string[] => watchers[i].messages.slice(alarmsFrom[i]).map((m) => m.topic.split('/').at(-1) ?? '')
  for (const node of cluster.nodes) t.notOk((await alarmsOf(node)).includes(ALARM), `no ${ALARM} alarm on ${node.name} before`)
  const cross = await track(n1.mqttUrl, { clientId: `ro-${name}-cross` })
  const local = await track(n2.mqttUrl, { clientId: `ro-${name}-local` })
  clients.push(cross.client, local.client)
  const topic = `ro/${name}`
  await cross.client.subscribeAsync(`${topic}/#`, { qos: 1 })
  await local.client.subscribeAsync(`${topic}/#`, { qos: 1 })

  const load = qos1Load(n2.mqttUrl, topic, PUBLISHERS)
  clients.push(...load.clients)
  const { acked, ackTimes, ackedSince } = load

  await waitFor(() => acked.length >= ACKS_BEFORE, 60_000, `${ACKS_BEFORE} messages acknowledged before Redis stops`)
  const stoppedAt = Date.now()
  await cluster.redis.stop()
  for (const [i, node] of cluster.nodes.entries()) {
    await waitFor(() => alarmTopics(i).includes('alert'), 30_000, `the ${ALARM} alert of ${node.name}`).catch(() => {})
    t.same(alarmTopics(i), ['alert'], `${ALARM} raised on ${node.name} while Redis is down ($SYS alert)`)
  }
  const asked = Date.now()
  const api = await cluster.api(n2, 'GET', `/alarms/${encodeURIComponent(n2.name)}`, undefined, { timeoutMs: 20_000 })
  const apiMs = Date.now() - asked
  t.equal(api.status, 503, 'the management API answers 503 while Redis is down (its logins are kept there)')
  t.match(api.body, { message: /^store_unavailable: / }, 'and says why')
  await waitFor(() => ackedSince(stoppedAt) >= ACKS_DURING, 30_000, `${ACKS_DURING} messages acknowledged while Redis is down`).catch(() => {})
  await waitFor(() => restartWhen(stoppedAt, ackedSince), 60_000, 'the time to start Redis again')
  const ackedDuring = acked.filter((_, i) => ackTimes[i] > stoppedAt)
  t.ok(ackedDuring.length >= ACKS_DURING, `n2 acknowledges its publishers while Redis is down (${ackedDuring.length})`)
  // n2 saw Redis gone by then; a PUBACK on its way at that moment (one per publisher) is the only one not counted in the window
  const n2SawItAt = watchers[1].times[alarmsFrom[1]] ?? stoppedAt
  const ackedOffline = ackedSince(n2SawItAt)
  t.ok(ackedOffline <= WINDOW + PUBLISHERS, `up to cluster.bus.window (${WINDOW}) of them once n2 saw Redis gone (${ackedOffline}): its messages for n1 are queued within the bound, then its publishers wait`)
  const localPayloads = (): Set<string> => new Set(local.messages.map((m) => m.payload))
  await waitFor(() => ackedDuring.every((payload) => localPayloads().has(payload)), 30_000, 'local deliveries during the outage').catch(() => {})
  t.same(ackedDuring.filter((payload) => !localPayloads().has(payload)), [], 'they reach the subscriber on n2 while Redis is down')
  t.ok(cluster.redis.running === false, 'Redis was down all along')

  const restartedAt = Date.now()
  await cluster.redis.restart()
  const crossPayloads = (): Set<string> => new Set(cross.messages.map((m) => m.payload))
  await waitFor(() => ackedDuring.every((payload) => crossPayloads().has(payload)), 30_000, 'the queued messages on n1').catch(() => {})
  const crossedAt = Date.now()
  for (const [i, node] of cluster.nodes.entries()) {
    await waitFor(() => alarmTopics(i).includes('clear'), 30_000, `the ${ALARM} clear of ${node.name}`).catch(() => {})
    t.same(alarmTopics(i), ['alert', 'clear'], `${ALARM} cleared on ${node.name} once Redis is back ($SYS clear)`)
    await waitFor(async () => !(await alarmsOf(node)).includes(ALARM), 30_000, `the ${ALARM} alarm gone on ${node.name}`).catch(() => {})
    t.notOk((await alarmsOf(node)).includes(ALARM), `the API lists it no longer on ${node.name}`)
    t.ok((await alarmsOf(node, 'history/')).includes(ALARM), `the API lists it among ${node.name}'s cleared alarms`)
  }
  await waitFor(() => ackedSince(restartedAt) >= ACKS_AFTER, 60_000, `${ACKS_AFTER} messages acknowledged after Redis is back`)
  await load.stop()

  await waitFor(() => acked.every((payload) => crossPayloads().has(payload) && localPayloads().has(payload)), 30_000, 'every acknowledged message received').catch(() => {})
  t.same(acked.filter((payload) => !crossPayloads().has(payload)), [], 'no acknowledged QoS 1 message lost across the bus (n2 → n1)')
  t.same(acked.filter((payload) => !localPayloads().has(payload)), [], 'none lost on n2 either')

  t.comment(`Redis down ${((restartedAt - stoppedAt) / 1000).toFixed(1)} s under QoS 1 load: longest time without a PUBACK ${(load.longestGap() / 1000).toFixed(1)} s; ` +
    `${ackedDuring.length} messages acknowledged meanwhile, all on n1 ${((crossedAt - restartedAt) / 1000).toFixed(1)} s after the restart (${acked.length} in all); ` +
    `the API answered ${api.status} in ${apiMs} ms`)
  await closeAll(cross.client, local.client, ...load.clients)
}

t.test('Redis stopped for a moment under QoS 1 load: local traffic goes on, an alarm meanwhile, nothing acknowledged lost', async (t) => {
  await outage(t, 'short', (stoppedAt, ackedSince) => ackedSince(stoppedAt) >= ACKS_DURING)
})

t.test(`Redis stopped for ${LONG_OUTAGE_MS / 1000} s under QoS 1 load: publishers wait at the bound, then resume; nothing acknowledged lost`, async (t) => {
  await outage(t, 'long', (stoppedAt) => Date.now() - stoppedAt >= LONG_OUTAGE_MS)
})
