// A rolling restart on a cluster of two: draining n1 sends its MQTT 5 clients
// DISCONNECT 0x9D (Server Moved) with a Server Reference naming n2; they go
// there and find their sessions (subscriptions and the QoS 1 messages queued
// meanwhile).
import t from 'tap'
import type { IDisconnectPacket } from 'mqtt-packet'
import { startCluster, waitFor } from './helpers/cluster.js'
import mqtt from 'mqtt'
import { closeAll, connect, nextMessages, waitEvent } from './helpers/mqtt.js'

t.test('draining one node of two moves v5 clients to the other with their sessions', async (t) => {
  const cluster = await startCluster({ size: 2 })
  t.teardown(cluster.close)
  const [n1, n2] = cluster.nodes
  const session = { protocolVersion: 5 as const, clean: false, properties: { sessionExpiryInterval: 300 } }
  const movers = await Promise.all(['d1', 'd2', 'd3'].map(async (id) => await connect(n1.mqttUrl, { clientId: id, ...session })))
  for (const c of movers) await c.subscribeAsync('drain/t', { qos: 1 })
  const publisher = await connect(n2.mqttUrl, { clientId: 'd-pub' })
  t.teardown(async () => await closeAll(publisher))

  const told = movers.map(async (c) => (await waitEvent<[IDisconnectPacket]>(c, 'disconnect', 15_000))[0])
  const drain = await cluster.ctl(n1, 'node', 'drain', '10')
  t.equal(drain.code, 0, drain.stderr)
  const packets = await Promise.all(told)
  for (const packet of packets) {
    t.equal(packet.reasonCode, 0x9d, 'Server Moved')
    t.equal(packet.properties?.serverReference, `127.0.0.1:${n2.port}`, 'the Server Reference names the other node')
  }
  await closeAll(...movers)
  await t.rejects(connect(n1.mqttUrl, { clientId: 'late', connectTimeout: 2000 }), 'the drained node takes no new connection')

  // published while the clients move
  await publisher.publishAsync('drain/t', 'while-moving', { qos: 1 })
  // each client listens before it connects: the queued message may come in the same read as the CONNACK
  const moved = packets.map((packet, i) => {
    const [host, port] = packet.properties!.serverReference!.split(':')
    const back = mqtt.connect(`mqtt://${host}:${port}`, { clientId: `d${i + 1}`, reconnectPeriod: 0, ...session })
    t.teardown(async () => await closeAll(back))
    return { back, first: nextMessages(back, 1, 30_000) }
  })
  const queued = await Promise.all(moved.map(async ({ first }) => await first))
  for (const [i, got] of queued.entries()) t.match(got, [{ topic: 'drain/t', payload: 'while-moving', qos: 1 }], `d${i + 1} gets what was queued while it moved`)
  const live = moved.map(async ({ back }) => await nextMessages(back, 1, 30_000))
  await publisher.publishAsync('drain/t', 'after', { qos: 1 })
  for (const got of await Promise.all(live)) t.match(got, [{ payload: 'after' }], 'its subscription came with it')
  const sessions = await cluster.api(n2, 'GET', '/sessions/d1')
  t.match(sessions.body, [{ client_id: 'd1', node: n2.name }], 'the session is on n2 now')
  const status = await waitFor(async () => {
    const run = await cluster.ctl(n1, 'node', 'drain', 'status')
    return run.stdout.includes('3') ? run.stdout : undefined
  }, 5000, 'drain status naming the three disconnected clients')
  t.ok(status)
})
