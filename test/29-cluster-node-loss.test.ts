// A node that does not answer (SIGSTOP) is reported as such within the RPC
// timeout, never a hang. A node killed with kill -9: requests for it answer, it drops
// out of the node lists within three heartbeats (plus a margin), broker_ctl
// lists it as stopped, its clients' wills are published by the cluster, its
// persistent sessions continue on another node; started again, it rejoins.
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { logsOnFailure, startCluster, track, waitFor, type Tracked } from './helpers/cluster.js'
import { closeAll, connect, type MqttClient } from './helpers/mqtt.js'

const cluster = await startCluster({ heartbeat: '500ms', rpcTimeout: '2s' })
t.teardown(cluster.close)
logsOnFailure(t, cluster)
const { api, apiV2 } = cluster
const [n1, n2, n3] = cluster.nodes
const clients: MqttClient[] = []
t.teardown(async () => await closeAll(...clients))
const keep = <C extends MqttClient | Tracked>(c: C): C => {
  clients.push('connack' in c ? c.client : c)
  return c
}

// bounds, not speeds: a request must come back within the RPC timeout (plus 2 s);
// a dead node must be gone within 3 heartbeats (its key's expiry) plus a margin
const answerWithin = cluster.rpcTimeoutMs + 2000
const goneWithin = 3 * cluster.heartbeatMs + 3000

t.test('a frozen node (SIGSTOP): requests for it through n1 answer within rpc_timeout + 2 s; thawed, it serves again', async (t) => {
  const client = keep(await track(n2.mqttUrl, { clientId: 'frozen-client' }))
  await client.client.subscribeAsync('frozen/t', { qos: 1 })
  // broker_ctl is a process of its own: what it takes to start and answer alone, on this (maybe loaded) machine
  const ctlStart = Date.now()
  await cluster.ctl(n1, 'status')
  const ctlAlone = Date.now() - ctlStart
  cluster.freeze(n2)
  t.teardown(() => cluster.thaw(n2))
  const [v3One, v2One, v3All, ctlAll] = await Promise.all([
    api(n1, 'GET', `/nodes/${n2.name}/connections/`, undefined, { timeoutMs: answerWithin }),
    apiV2(n1, 'GET', `/nodes/${n2.name}/clients`, undefined, { timeoutMs: answerWithin }),
    api(n1, 'GET', '/connections/', undefined, { timeoutMs: answerWithin }),
    (async () => {
      const started = Date.now()
      const run = await cluster.ctl(n1, 'clients', 'list')
      return { ...run, ms: Date.now() - started }
    })()
  ])
  t.ok([404, 502].includes(v3One.status), `v3 /nodes/<n2>/connections/: 404 or 502 (${v3One.status} ${JSON.stringify(v3One.body)})`)
  t.match(v2One, { body: { code: 101 } }, `v2 /nodes/<n2>/clients: code 101 (${v2One.status} ${JSON.stringify(v2One.body)})`)
  t.not(v3All.status, 0, `the cluster-wide list answers (${v3All.status} ${JSON.stringify(v3All.body)})`)
  // a hang is far past the RPC timeout; the CLI's own start (twice what it took alone, for the load's swings) is not the node's
  t.ok(ctlAll.ms < answerWithin + 2 * ctlAlone, `broker_ctl clients list on n1 answers (exit ${ctlAll.code}, ${ctlAll.ms} ms; alone ${ctlAlone} ms)`)
  cluster.thaw(n2)
  await waitFor(async () => (await api(n1, 'GET', `/nodes/${n2.name}/connections/`)).status === 200, goneWithin + 5000).catch(() => {})
  const back = await api(n1, 'GET', `/nodes/${n2.name}/connections/`)
  t.equal(back.status, 200, 'thawed, n2 answers again')
  await waitFor(async () => (await cluster.liveNodes(n3)).length === 3, goneWithin + 5000).catch(() => {})
  t.same(await cluster.liveNodes(n3), cluster.nodes.map((n) => n.name).sort(), 'and is listed')
})

t.test('kill -9 of n3', async (t) => {
  const watcher = keep(await track(n1.mqttUrl, { clientId: 'loss-watch', protocolVersion: 5 }))
  await watcher.client.subscribeAsync('loss/will/#', { qos: 1 })
  keep(await track(n3.mqttUrl, {
    clientId: 'loss-will-3', protocolVersion: 4, will: { topic: 'loss/will/v4', payload: Buffer.from('v4 will of n3'), qos: 1, retain: false }
  }))
  keep(await track(n3.mqttUrl, {
    clientId: 'loss-will-5', protocolVersion: 5, properties: { sessionExpiryInterval: 0 }, will: { topic: 'loss/will/v5', payload: Buffer.from('v5 will of n3'), qos: 1, retain: false }
  }))
  const persistent = keep(await track(n3.mqttUrl, { clientId: 'loss-session', protocolVersion: 5, clean: false, properties: { sessionExpiryInterval: 300 } }))
  await persistent.client.subscribeAsync('loss/session', { qos: 1 })
  t.same(await cluster.liveNodes(n1), cluster.nodes.map((n) => n.name).sort())

  await cluster.kill9(n3)
  const killedAt = Date.now()

  t.test('right after the kill, before it drops out, requests for n3 through n1 answer within rpc_timeout + 2 s', async (t) => {
    const [v3One, v2One, v3All] = await Promise.all([
      api(n1, 'GET', `/nodes/${n3.name}/connections/`, undefined, { timeoutMs: answerWithin }),
      apiV2(n1, 'GET', `/nodes/${n3.name}/clients`, undefined, { timeoutMs: answerWithin }),
      api(n1, 'GET', '/connections/', undefined, { timeoutMs: answerWithin })
    ])
    t.ok([404, 502].includes(v3One.status), `v3 /nodes/<n3>/connections/: 404 or 502 (${v3One.status} ${JSON.stringify(v3One.body)})`)
    t.match(v2One, { body: { code: 101 } }, `v2 /nodes/<n3>/clients: code 101 (${v2One.status})`)
    t.not(v3All.status, 0, `the cluster-wide list answers (${v3All.status})`)
  })

  t.test('n3 leaves the node lists within 3 heartbeats + margin; broker_ctl lists it as stopped', async (t) => {
    await waitFor(async () => !(await cluster.liveNodes(n1)).includes(n3.name), goneWithin, 'n3 gone from /nodes/ on n1').catch(() => {})
    t.same(await cluster.liveNodes(n1), [n1.name, n2.name], `gone from /nodes/ on n1 (after ${Date.now() - killedAt} ms)`)
    t.same(await cluster.liveNodes(n2), [n1.name, n2.name], 'and on n2')
    const status = await cluster.ctlJson<{ running_nodes: string[], stopped_nodes: string[] }>(n2, 'cluster', 'status')
    t.same(status.data, { running_nodes: [n1.name, n2.name], stopped_nodes: [n3.name] })
    const v2 = await apiV2(n1, 'GET', '/monitoring/nodes')
    t.same((v2.body as { result: Array<{ name: string }> }).result.map((n) => n.name).sort(), [n1.name, n2.name], 'v2 lists 2 nodes')
    const all = await api(n1, 'GET', '/connections/')
    t.equal(all.status, 200, 'the cluster-wide list works without n3')
    t.notOk(JSON.stringify(all.body).includes(n3.name), 'and holds none of n3\'s clients')
  })

  t.test('once n3 is gone, requests for it through n1 answer: 404/502 (v3), code 101 (v2)', async (t) => {
    const v3 = await api(n1, 'GET', `/nodes/${n3.name}/connections/`, undefined, { timeoutMs: answerWithin })
    t.ok([404, 502].includes(v3.status), `v3: ${v3.status}`)
    t.match(await apiV2(n1, 'GET', `/nodes/${n3.name}/clients`, undefined, { timeoutMs: answerWithin }), { body: { code: 101 } })
    const lookup = await api(n1, 'GET', `/nodes/${n3.name}`, undefined, { timeoutMs: answerWithin })
    t.ok([404, 502].includes(lookup.status), `v3 lookup: ${lookup.status}`)
  })

  t.test('the wills of n3\'s clients are published (MQTT 3.1.1 and 5), once each', async (t) => {
    await waitFor(() => watcher.messages.length >= 2, goneWithin + 5000, 'two wills').catch(() => {})
    await sleep(500)
    t.same(watcher.messages.map((m) => [m.topic, m.payload]).sort(), [['loss/will/v4', 'v4 will of n3'], ['loss/will/v5', 'v5 will of n3']])
  })

  t.test('a persistent session of n3 continues on n2 with what was published meanwhile', async (t) => {
    const pub = keep(await connect(n1.mqttUrl, { clientId: 'loss-pub' }))
    await pub.publishAsync('loss/session', 'while n3 was down', { qos: 1 })
    const back = keep(await track(n2.mqttUrl, { clientId: 'loss-session', protocolVersion: 5, clean: false, properties: { sessionExpiryInterval: 300 } }))
    t.equal(back.connack.sessionPresent, true)
    await waitFor(() => back.messages.length > 0, 5000).catch(() => {})
    await sleep(300)
    t.same(back.messages.map((m) => m.payload), ['while n3 was down'])
  })

  t.test('n3 started again rejoins: listed running, no longer stopped, and delivers', async (t) => {
    await cluster.restart(n3)
    await waitFor(async () => (await cluster.liveNodes(n1)).length === 3, goneWithin + 5000, 'n3 back in /nodes/ on n1').catch(() => {})
    t.same(await cluster.liveNodes(n1), cluster.nodes.map((n) => n.name).sort())
    await waitFor(async () => (await cluster.ctlJson<{ stopped_nodes: string[] }>(n2, 'cluster', 'status')).data.stopped_nodes.length === 0, goneWithin).catch(() => {})
    t.same((await cluster.ctlJson(n2, 'cluster', 'status')).data, { running_nodes: cluster.nodes.map((n) => n.name), stopped_nodes: [] })
    const sub = keep(await track(n3.mqttUrl, { clientId: 'loss-rejoined' }))
    await sub.client.subscribeAsync('loss/rejoined', { qos: 1 })
    const pub = keep(await connect(n1.mqttUrl, { clientId: 'loss-pub-2' }))
    await pub.publishAsync('loss/rejoined', 'hello n3', { qos: 1 })
    await waitFor(() => sub.messages.length > 0, 5000).catch(() => {})
    t.same(sub.messages.map((m) => m.payload), ['hello n3'])
  })
})
