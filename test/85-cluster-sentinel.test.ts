// A cluster on Redis Sentinel (cluster.redis.sentinels + master_name) losing
// its primary under QoS 1 load. Debian's redis-server twice (a primary and its
// replica) and a Sentinel (quorum 1, down-after 1 s) are started here on free
// ports; two real node processes find the primary through the Sentinel. With
// publishers on n2 sending QoS 1 to a subscriber on n1, the primary is killed
// (-9): the Sentinel promotes the replica, the nodes reconnect to it, every
// message a publisher had acknowledged reaches the subscriber, the offline
// session's queued message and the retained message written before the kill
// are still there, and the gap (the longest time no PUBACK came) is reported.
import mqtt, { type MqttClient } from 'mqtt'
import t from 'tap'
import { logsOnFailure, startCluster, track, waitFor } from './helpers/cluster.js'
import { closeAll } from './helpers/mqtt.js'
import { qos1Load } from './helpers/qos1-load.js'
import { startRedis, startSentinel } from './helpers/servers/redis.js'

const MASTER = 'brokermaster'
const PUBLISHERS = 4
/** PUBACKs before the kill, and after it (service is back), before the load stops */
const ACKS_BEFORE = 100
const ACKS_AFTER = 100

const primary = await startRedis()
const replica = await startRedis({ args: ['--replicaof', '127.0.0.1', String(primary.port)] })
t.teardown(async () => await replica.close())
await waitFor(async () => /master_link_status:up/.test(await replica.cli('INFO', 'replication')), 30_000, 'the replica in sync')
const sentinel = await startSentinel({ masterPort: primary.port, name: MASTER, downAfterMs: 1000, failoverTimeoutMs: 5000 })
t.teardown(async () => await sentinel.close())
// the Sentinel learns the replica from the primary's INFO; it can only promote one it knows
await waitFor(async () => (await sentinel.cli('SENTINEL', 'replicas', MASTER)).includes(String(replica.port)), 30_000, 'the Sentinel knows the replica')

const cluster = await startCluster({
  size: 2,
  redis: primary,
  settings: { 'cluster.redis.sentinels': `127.0.0.1:${sentinel.port}`, 'cluster.redis.master_name': MASTER }
})
t.teardown(cluster.close)
logsOnFailure(t, cluster)
const [n1, n2] = cluster.nodes
const clients: MqttClient[] = []
t.teardown(async () => await closeAll(...clients))

t.test('the primary killed under QoS 1 load: the replica takes over, nothing acknowledged is lost', async (t) => {
  // before: an offline persistent session with a queued QoS 1 message, a retained message
  const offline = await track(n1.mqttUrl, { clientId: 'sn-offline', clean: false })
  await offline.client.subscribeAsync('sn/queued', { qos: 1 })
  await offline.client.endAsync()
  const setup = mqtt.connect(n2.mqttUrl, { clientId: 'sn-setup', reconnectPeriod: 0 })
  clients.push(setup)
  await setup.publishAsync('sn/queued', 'queued before the failover', { qos: 1 })
  await setup.publishAsync('sn/retained', 'retained before the failover', { qos: 1, retain: true })
  // Redis replicates asynchronously: what is written before the kill is on the replica once WAIT says so
  t.equal(await primary.cli('WAIT', '1', '10000'), '1', 'the replica has the writes made before the kill')

  const sub = await track(n1.mqttUrl, { clientId: 'sn-sub', clean: false, reconnectPeriod: 1000 })
  clients.push(sub.client)
  await sub.client.subscribeAsync('sn/load/#', { qos: 1 })

  const load = qos1Load(n2.mqttUrl, 'sn/load', PUBLISHERS, { clean: false })
  clients.push(...load.clients)
  const { acked, ackTimes } = load

  await waitFor(() => acked.length >= ACKS_BEFORE, 60_000, `${ACKS_BEFORE} messages acknowledged before the kill`)
  const killedAt = Date.now()
  await primary.kill()
  await waitFor(() => ackTimes.filter((at) => at > killedAt).length >= ACKS_AFTER, 60_000, `${ACKS_AFTER} messages acknowledged after the kill`)
  await load.stop()

  const master = await sentinel.cli('SENTINEL', 'get-master-addr-by-name', MASTER)
  t.match(master, new RegExp(`\\b${replica.port}\\b`), 'the Sentinel names the replica as the primary now')

  const gapMs = load.longestGap(killedAt)
  t.comment(`Sentinel failover under QoS 1 load: ${(gapMs / 1000).toFixed(1)} s without a PUBACK (${acked.length} messages acknowledged)`)

  const received = (): Set<string> => new Set(sub.messages.filter((m) => m.topic.startsWith('sn/load/')).map((m) => m.payload))
  // on a timeout the assertion below names the messages lost
  await waitFor(() => acked.every((payload) => received().has(payload)), 30_000, 'every acknowledged message received').catch(() => {})
  t.same(acked.filter((payload) => !received().has(payload)), [], 'no acknowledged QoS 1 message lost')

  const back = await track(n2.mqttUrl, { clientId: 'sn-offline', clean: false })
  clients.push(back.client)
  t.equal(back.connack.sessionPresent, true, 'the persistent session survived the failover')
  await waitFor(() => back.messages.length > 0, 30_000, 'the queued message delivered')
  t.same(back.messages.map((m) => m.payload), ['queued before the failover'], 'its queued message, once')

  const reader = await track(n1.mqttUrl, { clientId: 'sn-reader' })
  clients.push(reader.client)
  await reader.client.subscribeAsync('sn/retained', { qos: 1 })
  await waitFor(() => reader.messages.length > 0, 30_000, 'the retained message')
  t.same(reader.messages.map((m) => [m.payload, m.retain]), [['retained before the failover', true]], 'the retained message survived the failover')
})
