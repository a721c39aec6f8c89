// The management API (v3 and v2) and broker_ctl see the whole three-node
// cluster from any node: node and connection lists aggregate every node,
// `/nodes/:node/...` runs on that node, and operations through one node reach
// a client on another (kick, subscribe on its behalf), or every node (configs,
// banned entries, applications).
import t from 'tap'
import { logsOnFailure, opened, startCluster, track, waitFor } from './helpers/cluster.js'
import { closeAll, connect, nextMessages } from './helpers/mqtt.js'
import mqtt from 'mqtt'

// generous: on a loaded CI machine a node's answer can take seconds, and a late one drops its records from a listing
const cluster = await startCluster({ rpcTimeout: '10s' })
t.teardown(cluster.close)
logsOnFailure(t, cluster)
const { api, apiV2 } = cluster
const [n1, n2, n3] = cluster.nodes
const names = cluster.nodes.map((n) => n.name)


interface Page { items: Array<{ client_id: string, node: string }>, meta: { count: number } }

/** The CONNACK refusal code (MQTT 5 reason code) of a connect. */
async function refusal (url: string, options: mqtt.IClientOptions): Promise<number | undefined> {
  const client = mqtt.connect(url, { reconnectPeriod: 0, connectTimeout: 5000, ...options })
  return await new Promise((resolve) => {
    client.once('connect', () => {
      client.end(true)
      resolve(undefined)
    })
    client.once('error', (err) => {
      client.end(true)
      resolve((err as { code?: number }).code)
    })
  })
}

t.test('GET /api/v3/nodes/ on every node lists the 3 nodes, Running', async (t) => {
  for (const node of cluster.nodes) {
    const res = await api(node, 'GET', '/nodes/')
    t.equal(res.status, 200)
    const list = res.body as Array<{ node: string, node_status: string }>
    t.same(list.map((n) => n.node).sort(), names, `listed by ${node.name}`)
    t.ok(list.every((n) => n.node_status === 'Running'))
  }
  t.match(await api(n1, 'GET', `/nodes/${n3.name}`), { status: 200, body: { name: n3.name, node_status: 'Running' } }, 'a lookup of another node')
  const brokers = (await api(n2, 'GET', '/brokers/')).body as Array<{ node: string }>
  t.same(brokers.map((b) => b.node).sort(), names, '/brokers/ too')
})

t.test('connections: the cluster list on n1 holds n2\'s and n3\'s clients; /nodes/<n3>/connections/ via n1 only n3\'s', async (t) => {
  const keep = opened(t)
  keep(await connect(n1.mqttUrl, { clientId: 'c-on-n1' }))
  keep(await connect(n2.mqttUrl, { clientId: 'c-on-n2' }))
  keep(await connect(n3.mqttUrl, { clientId: 'c-on-n3' }))
  // a node lists a client from its accepted CONNACK on (test/75); the wait is for a loaded machine's slow answers
  const listed = async (): Promise<Page> => (await api(n1, 'GET', '/connections/')).body as Page
  await waitFor(async () => (await listed()).meta.count === 3, 10_000, 'all three clients listed')
  const all = await listed()
  const where = Object.fromEntries(all.items.map((c) => [c.client_id, c.node]))
  t.same(where, { 'c-on-n1': n1.name, 'c-on-n2': n2.name, 'c-on-n3': n3.name })
  t.equal(all.meta.count, 3)
  const onN3 = (await api(n1, 'GET', `/nodes/${n3.name}/connections/`)).body as Page
  t.same(onN3.items.map((c) => [c.client_id, c.node]), [['c-on-n3', n3.name]])
  t.match(await api(n1, 'GET', '/connections/c-on-n2'), { status: 200, body: [{ client_id: 'c-on-n2', node: n2.name }] }, 'a lookup finds a client on another node')
  t.match(await api(n2, 'GET', `/nodes/${n3.name}/connections/c-on-n3`), { status: 200, body: [{ client_id: 'c-on-n3', node: n3.name }] })
  const v2 = await apiV2(n1, 'GET', `/nodes/${n2.name}/clients`)
  t.match(v2, { status: 200, body: { code: 0, result: { objects: [{ client_id: 'c-on-n2' }] } } }, 'v2 per-node clients')
})

t.test('DELETE /api/v3/connections/<id> through n1 of a client on n3: DISCONNECT 0x98', async (t) => {
  const keep = opened(t)
  const victim = keep(await track(n3.mqttUrl, { clientId: 'kick-n3', protocolVersion: 5 }))
  const res = await api(n1, 'DELETE', '/connections/kick-n3')
  t.equal(res.status, 200)
  t.equal(res.body, 'ok')
  await waitFor(() => victim.closed, 5000, 'the client closed')
  t.same(victim.disconnects.map((d) => d.reasonCode), [0x98])
  t.match(await api(n1, 'DELETE', '/connections/kick-n3'), { status: 404, body: { code: 112 } }, 'not online any more')
})

t.test('POST /api/v3/mqtt/subscribe through n1 for a client on n2: it receives a publish made on n3', async (t) => {
  const keep = opened(t)
  const client = keep(await connect(n2.mqttUrl, { clientId: 'sub-for-me' }))
  const res = await api(n1, 'POST', '/mqtt/subscribe', { client_id: 'sub-for-me', topic: 'api/sub', qos: 1 })
  t.match(res, { status: 200, body: { code: 0 } })
  const subs = (await api(n3, 'GET', '/subscriptions/sub-for-me')).body as Array<{ topic: string, node: string }>
  t.match(subs, [{ topic: 'api/sub', node: n2.name }], 'listed from n3, on n2')
  const got = nextMessages(client, 1)
  const pub = keep(await connect(n3.mqttUrl, { clientId: 'sub-for-me-pub' }))
  await pub.publishAsync('api/sub', 'via api', { qos: 1 })
  t.match(await got, [{ topic: 'api/sub', payload: 'via api', qos: 1 }])
  t.match(await api(n1, 'POST', '/mqtt/subscribe', { client_id: 'nobody-here', topic: 'x', qos: 0 }), { status: 404, body: { code: 112 } })
  // a publish through the API on n1 reaches the client on n2
  const again = nextMessages(client, 1)
  t.match(await api(n1, 'POST', '/mqtt/publish', { topic: 'api/sub', payload: 'from api', qos: 1 }), { status: 200 })
  t.match(await again, [{ payload: 'from api' }])
})

t.test('PUT /api/v3/configs/<app> through n1 changes it on every node', async (t) => {
  /** mqtt.allow_anonymous of node `on`, read through node `through` */
  const read = async (through: typeof n1, on: typeof n1): Promise<string | undefined> => {
    const items = (await api(through, 'GET', `/nodes/${on.name}/configs/`)).body as Array<{ key: string, value: string }>
    return items.find((c) => c.key === 'mqtt.allow_anonymous')?.value
  }
  t.teardown(async () => { await api(n1, 'PUT', '/configs/broker', { key: 'mqtt.allow_anonymous', value: 'true' }) })
  for (const node of cluster.nodes) t.equal(await read(n1, node), 'true', `before, on ${node.name}`)
  t.match(await api(n1, 'PUT', '/configs/broker', { key: 'mqtt.allow_anonymous', value: 'false' }), { status: 200, body: 'ok' })
  for (const node of cluster.nodes) t.equal(await read(n2, node), 'false', `after, on ${node.name} (read through n2)`)
  t.equal(await refusal(n3.mqttUrl, { clientId: 'anon-n3', protocolVersion: 5 }), 0x87, 'an anonymous client is refused on n3')
  t.match(await api(n1, 'PUT', `/nodes/${n3.name}/configs/broker`, { key: 'mqtt.allow_anonymous', value: 'true' }), { status: 200, body: 'ok' })
  t.equal(await read(n1, n3), 'true', 'a per-node PUT changes that node')
  t.equal(await read(n1, n2), 'false', 'and not the others')
  const accepted = await connect(n3.mqttUrl, { clientId: 'anon-n3-ok' })
  await closeAll(accepted)
})

t.test('a banned entry created through n1 refuses the client on n3 (0x8A); deleted through n2, it connects', async (t) => {
  const until = Math.floor(Date.now() / 1000) + 600
  t.match(await api(n1, 'POST', '/banned/', { who: 'banned-x', as: 'client_id', reason: 'test', until }), { status: 200 })
  t.equal(await refusal(n3.mqttUrl, { clientId: 'banned-x', protocolVersion: 5 }), 0x8a, 'refused on n3 with 0x8A')
  const listed = (await api(n3, 'GET', '/banned/')).body as { items: Array<{ who: string }> }
  t.ok(listed.items.some((b) => b.who === 'banned-x'), 'listed on n3')
  t.match(await api(n2, 'DELETE', '/banned/banned-x?as=client_id'), { status: 200 })
  const ok = await connect(n3.mqttUrl, { clientId: 'banned-x' })
  await closeAll(ok)
  t.pass('connects once the entry is gone')
})

t.test('an application created through n1 authenticates on n3', async (t) => {
  const created = await api(n1, 'POST', '/apps/', { app_id: 'cluster-app', name: 'Cluster app' })
  t.equal(created.status, 200)
  const { secret } = created.body as { secret: string }
  t.match(await api(n3, 'GET', '/brokers/', undefined, { auth: `cluster-app:${secret}` }), { status: 200 })
  t.match(await api(n3, 'GET', '/brokers/', undefined, { auth: 'cluster-app:wrong' }), { status: 401 })
  t.match(await api(n2, 'DELETE', '/apps/cluster-app'), { status: 200 })
  await waitFor(async () => (await api(n3, 'GET', '/brokers/', undefined, { auth: `cluster-app:${secret}` })).status === 401, 5000, 'the deleted app refused on n3')
})

t.test('an administrator user created through n1 logs in to v2 on n3; deleted through n2, n3 refuses it', async (t) => {
  t.match(await api(n1, 'POST', '/users/', { username: 'cluster-admin', password: 'pw-1', tags: 'ops' }), { status: 200, body: 'ok' })
  t.match(await apiV2(n3, 'GET', '/monitoring/nodes', undefined, { auth: 'cluster-admin:pw-1' }), { status: 200, body: { code: 0 } })
  t.match(await api(n3, 'POST', '/auth', { username: 'cluster-admin', password: 'pw-1' }), { status: 200 })
  t.match(await api(n2, 'DELETE', '/users/cluster-admin'), { status: 200 })
  // n3 checked this user a moment ago: what it remembered must not outlive the removal made on n2
  await waitFor(async () => (await apiV2(n3, 'GET', '/monitoring/nodes', undefined, { auth: 'cluster-admin:pw-1' })).status === 401, 5000).catch(() => {})
  t.equal((await apiV2(n3, 'GET', '/monitoring/nodes', undefined, { auth: 'cluster-admin:pw-1' })).status, 401, 'refused on n3 within 5 s')
})

t.test('v2: GET /api/v2/monitoring/nodes and /management/nodes list 3 nodes', async (t) => {
  for (const path of ['/monitoring/nodes', '/management/nodes']) {
    const res = await apiV2(n2, 'GET', path)
    t.equal(res.status, 200, path)
    const body = res.body as { code: number, result: Array<{ name: string }> }
    t.equal(body.code, 0)
    t.same(body.result.map((n) => n.name).sort(), names, path)
  }
  t.match(await apiV2(n1, 'GET', `/monitoring/nodes/${n3.name}`), { status: 200, body: { code: 0, result: { name: n3.name } } })
})

t.test('an unknown node name: 404 (v3), 404 with code 101 (v2)', async (t) => {
  for (const path of ['/nodes/nobody@nowhere', '/nodes/nobody@nowhere/connections/', '/nodes/nobody@nowhere/configs/']) {
    t.equal((await api(n1, 'GET', path)).status, 404, path)
  }
  for (const path of ['/monitoring/nodes/nobody@nowhere', '/nodes/nobody@nowhere/clients']) {
    t.match(await apiV2(n1, 'GET', path), { status: 404, body: { code: 101 } }, path)
  }
})

t.test('broker_ctl cluster status on n2 lists the 3 running nodes', async (t) => {
  const run = await cluster.ctl(n2, 'cluster', 'status')
  t.equal(run.code, 0)
  t.equal(run.stdout, `Cluster status: running_nodes=[${names.join(', ')}], stopped_nodes=[]\n`)
  t.same((await cluster.ctlJson(n2, 'cluster', 'status')).data, { running_nodes: names, stopped_nodes: [] })
})

t.test('broker_ctl on n1: clients list shows every node\'s clients; clients kick of a client on n3 works', async (t) => {
  const keep = opened(t)
  const victim = keep(await track(n3.mqttUrl, { clientId: 'ctl-kick-n3', protocolVersion: 5 }))
  keep(await connect(n2.mqttUrl, { clientId: 'ctl-on-n2' }))
  const list = await cluster.ctlJson<Array<{ client_id: string, node: string }>>(n1, 'clients', 'list')
  t.match(list.data.find((c) => c.client_id === 'ctl-kick-n3'), { node: n3.name })
  t.match(list.data.find((c) => c.client_id === 'ctl-on-n2'), { node: n2.name })
  const run = await cluster.ctl(n1, 'clients', 'kick', 'ctl-kick-n3')
  t.equal(run.code, 0, run.stderr)
  t.equal(run.stdout, 'ok\n')
  await waitFor(() => victim.closed, 5000, 'the client closed')
  t.same(victim.disconnects.map((d) => d.reasonCode), [0x98])
  const again = await cluster.ctl(n1, 'clients', 'kick', 'ctl-kick-n3')
  t.equal(again.code, 1, 'not found any more')
})

t.test('$SYS/brokers lists the cluster\'s nodes', async (t) => {
  const keep = opened(t)
  const sub = keep(await track(n1.mqttUrl, { clientId: 'sys-brokers' }))
  await sub.client.subscribeAsync('$SYS/brokers', { qos: 0 })
  const listed = (): string[] => sub.messages.at(-1)?.payload.split(',').sort() ?? []
  // the retained one, or the next one published after a change
  await waitFor(() => listed().length === names.length, 10_000).catch(() => {})
  t.same(listed(), names, `the last of ${JSON.stringify(sub.messages.map((m) => m.payload))}`)
})
