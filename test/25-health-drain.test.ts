// Graceful drain and health (issue 10), on real `bin/broker` processes:
// `broker_ctl node drain` closes the listeners, then disconnects the clients
// at the drain rate (MQTT 5: DISCONNECT 0x9D Server Moved; 3.x: closed);
// persistent sessions stay stored across the restart that follows. /status
// (broker_management) answers 503 with the reason while starting, draining
// and stopping.
import { connect as netConnect } from 'node:net'
import t from 'tap'
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt'
import { FIXTURE_PLUGINS, freePort, spawnBroker, startBroker, type BrokerProcess, type TestBroker } from './helpers/broker.js'
import { NodeLifecycle, healthOf } from '../lib/node-state.js'
import { spawnCtlNode, type CtlNode } from './helpers/ctl.js'
import { closeAll, connect, nextMessages, waitEvent } from './helpers/mqtt.js'

/**
 * How long a wait set up before the step that causes it lasts: the drain's DISCONNECT is awaited from before the
 * broker_ctl run that starts it (a Node.js process), which alone took over the helper's 5 s on a loaded 2-core box
 */
const WAIT_MS = 30_000

// node processes and broker_ctl runs (a Node.js process each): it ran out of tap's 120 s at load 23, so the limit is generous
t.setTimeout(480_000)

interface DrainStatus { state: string, rate: number, total: number, disconnected: number, remaining: number, started_at: string | null, finished_at: string | null }

/** Resolves with the error a TCP connection attempt ends with (the port is closed: ECONNREFUSED). */
async function refusal (port: number): Promise<string> {
  return await new Promise((resolve) => {
    const socket = netConnect(port, '127.0.0.1')
    socket.once('connect', () => { socket.destroy(); resolve('connected') })
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message))
  })
}

async function until (check: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs
  while (!await check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** A management API v3 call with the default application's credentials. */
async function api (port: number, method: string, path: string, body?: unknown): Promise<{ status: number, body: unknown }> {
  const headers: Record<string, string> = { authorization: `Basic ${Buffer.from('admin:public').toString('base64')}` }
  if (body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  return { status: res.status, body: await res.json() }
}

async function stopped (node: CtlNode): Promise<void> {
  node.child.kill('SIGTERM')
  await node.exited
}

t.test('drain: v5 gets 0x9D, 3.x is closed, new connections are refused, persistent sessions survive the restart', async (t) => {
  const node = await spawnCtlNode()
  const later: { restarted?: BrokerProcess } = {}
  t.teardown(async () => {
    later.restarted?.child.kill('SIGTERM')
    await later.restarted?.exited
    await node.stop()
  })
  const url = node.mqttUrl
  const v5 = await connect(url, { clientId: 'drain-v5', protocolVersion: 5, clean: false, properties: { sessionExpiryInterval: 3600 } })
  const v3 = await connect(url, { clientId: 'drain-v3', protocolVersion: 4, clean: false })
  await v5.subscribeAsync('drain/v5', { qos: 1 })
  await v3.subscribeAsync('drain/v3', { qos: 1 })
  t.teardown(async () => await closeAll(v5, v3))

  const v5Disconnect = waitEvent<[{ reasonCode?: number, properties?: Record<string, unknown> }]>(v5, 'disconnect', WAIT_MS)
  const v3Closed = waitEvent(v3, 'close', WAIT_MS)
  const drain = await node.json<DrainStatus>('node', 'drain')
  t.equal(drain.code, 0)
  t.match(drain.data, { state: /^(draining|drained)$/, rate: 100, total: 2 }, 'at 100/s both may go in the first tick')

  const [packet] = await v5Disconnect
  t.equal(packet.reasonCode, 0x9D, 'MQTT 5: DISCONNECT Server Moved')
  t.equal(packet.properties?.serverReference, undefined, 'a single node has no Server Reference to give')
  await v3Closed
  t.pass('the 3.x client is closed')

  t.equal(await refusal(node.port), 'ECONNREFUSED', 'a new connection is refused: the listener is closed')
  await until(async () => (await node.json<DrainStatus>('node', 'drain', 'status')).data.state === 'drained', 'drained')
  const status = await node.json<DrainStatus>('node', 'drain', 'status')
  t.match(status.data, { state: 'drained', total: 2, disconnected: 2, remaining: 0, finished_at: String })
  const text = await node.run('node', 'drain', 'status')
  t.match(text.stdout, /state\s+: drained/)
  const health = await node.json<{ status: string, reasons: string[] }>('node', 'health')
  t.match(health.data, { status: 'draining', reasons: ['draining'] })
  const again = await node.json<DrainStatus>('node', 'drain')
  t.match(again, { code: 0, data: { state: 'drained' } }, 'a second drain changes nothing')

  // the rolling restart: the same data directory, the same port
  await stopped(node)
  later.restarted = await spawnBroker(node.dataDir, {}, node.port)
  const publisher = await connect(url, { clientId: 'drain-publisher' })
  await publisher.publishAsync('drain/v5', 'queued for v5', { qos: 1 })
  await publisher.publishAsync('drain/v3', 'queued for v3', { qos: 1 })
  await closeAll(publisher)
  for (const [clientId, protocolVersion, topic] of [['drain-v5', 5, 'drain/v5'], ['drain-v3', 4, 'drain/v3']] as const) {
    const options: IClientOptions = { clientId, protocolVersion, clean: false, ...(protocolVersion === 5 ? { properties: { sessionExpiryInterval: 3600 } } : {}), reconnectPeriod: 0, connectTimeout: 5000 }
    const back = mqtt.connect(url, options)
    const received = nextMessages(back, 1, WAIT_MS)
    const [connack] = await waitEvent<[{ sessionPresent: boolean }]>(back, 'connect', WAIT_MS)
    t.equal(connack.sessionPresent, true, `${clientId}: session present after the restart`)
    t.match(await received, [{ topic, payload: `queued for ${protocolVersion === 5 ? 'v5' : 'v3'}` }], `${clientId}: the subscription was kept`)
    await closeAll(back)
  }
})

t.test('drain at 5 clients per second: 10 clients are disconnected over at least ~1.5 s, in order of the rate', async (t) => {
  const node = await spawnCtlNode({}, { 'node.drain_rate': 1000 })
  t.teardown(async () => await node.stop())
  const clients: MqttClient[] = []
  for (let i = 0; i < 10; i++) clients.push(await connect(node.mqttUrl, { clientId: `rate-${i}`, protocolVersion: 5 }))
  t.teardown(async () => await closeAll(...clients))
  const closedAt: number[] = []
  const allClosed = Promise.all(clients.map(async (c) => {
    await waitEvent(c, 'close', 20_000)
    closedAt.push(Date.now())
  }))
  const drain = await node.json<DrainStatus>('node', 'drain', '5')
  t.match(drain.data, { state: 'draining', rate: 5, total: 10 }, 'the rate given overrides node.drain_rate')
  await allClosed
  closedAt.sort((a, b) => a - b)
  const spread = closedAt[9] - closedAt[0]
  t.ok(spread >= 1500, `first to last disconnect took ${spread} ms (10 at 5/s: 1.8 s of ticks)`)
  // at 5/s no two disconnects share a tick: consecutive ones are ~200 ms apart
  const gaps = closedAt.slice(1).map((at, i) => at - closedAt[i])
  t.ok(gaps.filter((g) => g >= 100).length >= 7, `spread over the run, not in one burst (gaps ${gaps.join(', ')})`)
})

t.test('broker_ctl node: usage errors and a bad rate', async (t) => {
  const node = await spawnCtlNode()
  t.teardown(async () => await node.stop())
  t.equal((await node.run('node', 'drain', '0')).code, 2, 'rate 0 is a usage error')
  t.equal((await node.run('node', 'drain', '--', '--rate', 'fast')).code, 2, 'the --rate form (after --) is read too')
  t.equal((await node.run('node', 'rest')).code, 2)
  t.match((await node.run('node', 'drain', 'status')).stdout, /not draining/)
  const health = await node.run('node', 'health')
  t.match(health, { code: 0, stdout: /is running/ })
})

interface StatusAnswer { code: number | 'refused', body?: { node: string, status: string, uptime: string, reasons?: string[] } }

async function getStatus (port: number, path = '/status'): Promise<StatusAnswer> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}${path}`)
    return { code: res.status, body: await res.json() as StatusAnswer['body'] }
  } catch {
    return { code: 'refused' }
  }
}

t.test('/status through start, drain and stop (in process, broker_management)', async (t) => {
  const http = await freePort()
  const plugins = { broker_management: { 'management.listener.http': `127.0.0.1:${http}` }, broker_fixture_slow: { 'fixture.boot_delay': 1500 } }
  const starting = startBroker({}, ['tcp'], undefined, { plugins, pluginDirs: [FIXTURE_PLUGINS] })
  t.teardown(async () => await (await starting).stop())

  // the API listens while the later plugin still loads: the node is starting
  const seen: StatusAnswer[] = []
  let settled = false
  void starting.then(() => { settled = true })
  while (!settled) {
    const answer = await getStatus(http)
    if (answer.code !== 'refused') seen.push(answer)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  const broker: TestBroker = await starting
  const node = broker.node.name
  t.ok(seen.length > 0, `answers while starting (${seen.length})`)
  t.match(seen[0], { code: 503, body: { node, status: 'Starting', reasons: ['starting'], uptime: String } }, 'starting: 503 starting')
  t.ok(seen.every((a) => a.code === 503 || (a.code === 200 && a === seen.at(-1))), 'never 200 before the listeners are open')

  const running = await getStatus(http)
  t.match(running, { code: 200, body: { node, status: 'Running', uptime: /seconds/ } }, 'running: 200')
  t.notOk('reasons' in running.body!, 'no reasons when it serves')
  t.match(await getStatus(http, '/status/ready'), { code: 200, body: { status: 'Running' } }, 'ready')
  const bad = await fetch(`http://127.0.0.1:${http}/status?x=1`)
  t.equal(bad.status, 200, 'no credentials, a query is ignored')

  const v5 = await connect(`mqtt://127.0.0.1:${broker.port()}`, { clientId: 'status-v5', protocolVersion: 5 })
  t.teardown(async () => await closeAll(v5))
  const gone = waitEvent<[{ reasonCode?: number }]>(v5, 'disconnect', WAIT_MS)
  const drain = await api(http, 'PUT', `/api/v3/nodes/${node}/drain`, { rate: 10 })
  t.match(drain, { status: 200, body: { state: /^(draining|drained)$/, rate: 10, total: 1 } }, 'PUT /api/v3/nodes/:node/drain')
  t.equal((await gone)[0].reasonCode, 0x9D)
  t.match(await getStatus(http), { code: 503, body: { node, status: 'Draining', reasons: ['draining'] } }, 'draining: 503 draining')
  t.match(await getStatus(http, '/status/ready'), { code: 503, body: { reasons: ['draining'] } })
  const progress = await api(http, 'GET', `/api/v3/nodes/${node}/drain`)
  t.match(progress, { status: 200, body: { state: 'drained', disconnected: 1, remaining: 0 } }, 'GET /api/v3/nodes/:node/drain')
  t.match(await api(http, 'PUT', `/api/v3/nodes/${node}/drain`, { rate: 0 }), { status: 400 }, 'a rate below 1 is refused')
  t.match(await api(http, 'PUT', `/api/v3/nodes/${node}/drain`), { status: 200, body: { state: 'drained' } }, 'no body: the default rate; a second drain changes nothing')
  t.match(await api(http, 'PUT', '/api/v3/nodes/other@host/drain'), { status: 404 }, 'another node')
  const brokers = await api(http, 'GET', `/api/v3/brokers/${node}`)
  t.match(brokers, { status: 200, body: { node_status: 'Running' } }, 'node_status stays EMQ X\'s Running (the drain shows in /status and /drain)')

  // stopping: 503 stopping while the API is still up, then the port is closed
  const stopping = broker.stop()
  let done = false
  void stopping.then(() => { done = true })
  const during: StatusAnswer[] = []
  while (!done) {
    during.push(await getStatus(http))
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  await stopping
  t.ok(during.every((a) => a.code === 'refused' || (a.code === 503 && ['Draining', 'Stopping'].includes(a.body!.status))), `while stopping: 503 or refused (${during.map((a) => a.code === 'refused' ? 'refused' : `${a.code} ${a.body!.status}`).join(', ')})`)
  t.equal((await getStatus(http)).code, 'refused', 'stopped: connection refused')
})

t.test('health: the state first, then the store', async (t) => {
  t.same(healthOf('running', { storeAvailable: true }), { status: 'running', reasons: [] })
  t.same(healthOf('running', { storeAvailable: false }), { status: 'running', reasons: ['store_unavailable'] })
  t.same(healthOf('draining', { storeAvailable: true }), { status: 'draining', reasons: ['draining'] })
  t.same(healthOf('running', { storeAvailable: true, more: ['cluster_unavailable'] }), { status: 'running', reasons: ['cluster_unavailable'] })
  const lifecycle = new NodeLifecycle()
  const states: string[] = []
  const off = lifecycle.onChange((s) => states.push(s))
  lifecycle.set('running')
  lifecycle.set('running')
  lifecycle.set('draining')
  off()
  lifecycle.set('stopping')
  t.same(states, ['running', 'draining'])
  t.equal(lifecycle.state, 'stopping')
})
