// broker_stomp on a real node with real clients: stomp.py (Debian's
// python3-stomp) for STOMP 1.0, 1.1 and 1.2, MQTT.js on the MQTT side, a
// raw socket for what no client library sends. The gateway's clients are
// the broker's clients: listed with proto_name STOMP, counted, kicked,
// announced on $SYS, closed when the plugin unloads.
import t from 'tap'
import type { MqttClient } from 'mqtt'
import { startPluginNode, type PluginNode } from '../../../lib/plugin-kit/testing.js'
import { frame, RawStomp, StompPy, type StompEvent } from './clients.js'

interface Listener { protocol: string, listen_on: string, current_conns: number, max_conns: number, acceptors: number, shutdown_count: [] | { closed: number, kicked: number } }
interface Connection { client_id: string, proto_name: string, proto_ver: string | number, ipaddress: string, port: number, username: string, keepalive: number, zone: string }

let node: PluginNode
let port = 0
const stompClients: StompPy[] = []

async function listeners (): Promise<Listener[]> {
  const { body } = await node.http('GET', `/nodes/${node.node.name}/listeners`)
  return body as Listener[]
}

async function stompListener (): Promise<Listener | undefined> {
  return (await listeners()).find((l) => l.protocol === 'stomp:tcp')
}

async function connection (clientId: string): Promise<Connection | undefined> {
  const { body } = await node.http('GET', `/connections/${encodeURIComponent(clientId)}`)
  return (body as { data?: Connection[] }).data?.[0] ?? (body as Connection[])[0]
}

async function metric (key: string): Promise<number> {
  const { body } = await node.http('GET', `/nodes/${node.node.name}/metrics/`)
  return (body as Record<string, number>)[key]
}

function stomp (): StompPy {
  const client = new StompPy(port)
  stompClients.push(client)
  return client
}

async function mqttMessage (client: MqttClient, topic: string): Promise<{ payload: string, properties: Record<string, unknown> }> {
  return await new Promise((resolve) => {
    const onMessage = (got: string, payload: Buffer, packet: { properties?: Record<string, unknown> }): void => {
      if (got !== topic) return
      client.off('message', onMessage)
      resolve({ payload: payload.toString(), properties: packet.properties ?? {} })
    }
    client.on('message', onMessage)
  })
}

async function until (what: string, check: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!await check()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

t.before(async () => {
  node = await startPluginNode({
    plugin: 'broker_stomp',
    settings: { 'stomp.listener': '127.0.0.1:0', 'stomp.frame.max_body_length': 1000 },
    // a small window: messages a STOMP client has not acknowledged hold the rest back
    node: { 'zone.external.max_inflight': 2 },
    // the $SYS presence notices are broker_modules' (loaded on a new install)
    others: { broker_modules: {} },
    withApi: true
  })
  port = Number((await stompListener())!.listen_on.split(':')[1])
})

t.teardown(async () => {
  await Promise.all(stompClients.map(async (c) => await c.stop()))
  await node.stop()
})

t.test('STOMP 1.0, 1.1 and 1.2: CONNECT, SEND to MQTT, MESSAGE from MQTT, listed with proto_name STOMP', async (t) => {
  const mqtt = await node.mqtt({ clientId: 'mqtt-peer', protocolVersion: 5 })
  await mqtt.subscribeAsync('to-mqtt/#', { qos: 1 })
  for (const [version, login] of [['1.0', undefined], ['1.1', 'guest'], ['1.2', 'guest']] as const) {
    const py = stomp()
    const connected = await py.connect({ version, login, passcode: login })
    t.equal(connected.event, 'connected', `${version}: ${JSON.stringify(connected)}`)
    t.equal(connected.headers?.version, version)
    const clientId = connected.headers?.session ?? ''
    t.match(clientId, /^stomp-/, 'a generated client id, given as `session`')

    const listed = await connection(clientId)
    t.match(listed, { proto_name: 'STOMP', proto_ver: version, ipaddress: '127.0.0.1', zone: 'external', username: login ?? 'undefined' }, `${version} in /connections`)
    t.ok(listed!.port > 0 && listed!.port !== port, 'the STOMP client\'s own port')

    await py.run({ op: 'subscribe', destination: `from-mqtt/${version}/+`, id: 'sub-1', headers: { receipt: `sub-${version}` } })
    await py.next('receipt', (e) => e.headers?.['receipt-id'] === `sub-${version}`)
    await mqtt.publishAsync(`from-mqtt/${version}/x`, `to stomp ${version}`, { qos: 1 })
    const message = await py.next('message')
    t.match(message.headers, { destination: `from-mqtt/${version}/x`, subscription: version === '1.0' ? 'sub-1' : 'sub-1', 'message-id': /\d+/ })
    t.equal(message.body, `to stomp ${version}`)

    const arrived = mqttMessage(mqtt, `to-mqtt/${version}`)
    await py.run({ op: 'send', destination: `to-mqtt/${version}`, body: `from stomp ${version}`, headers: { receipt: `send-${version}`, 'x-custom': 'yes' } })
    const received = await arrived
    t.equal(received.payload, `from stomp ${version}`)
    t.match(received.properties.userProperties, { 'x-custom': 'yes' }, 'STOMP headers travel as MQTT 5 user properties')
    await py.next('receipt', (e) => e.headers?.['receipt-id'] === `send-${version}`)
    await py.stop()
    await until('the client leaves the listing', async () => await connection(clientId) === undefined)
  }
  await mqtt.endAsync()
})

t.test('a STOMP client\'s presence on $SYS, and a client-id header names it', async (t) => {
  const watcher = await node.mqtt({ clientId: 'sys-watcher' })
  await watcher.subscribeAsync('$SYS/brokers/+/clients/stomp-named/+', { qos: 1 })
  const connected = mqttMessage(watcher, `$SYS/brokers/${node.node.name}/clients/stomp-named/connected`)
  const py = stomp()
  t.equal((await py.connect({ login: 'guest', passcode: 'guest', headers: { 'client-id': 'stomp-named' } })).headers?.session, 'stomp-named')
  t.match(JSON.parse((await connected).payload), { clientid: 'stomp-named', username: 'guest', proto_name: 'STOMP', proto_ver: '1.2', ipaddress: '127.0.0.1' })
  const gone = mqttMessage(watcher, `$SYS/brokers/${node.node.name}/clients/stomp-named/disconnected`)
  await py.run({ op: 'disconnect', receipt: 'bye' })
  await py.next('receipt', (e) => e.headers?.['receipt-id'] === 'bye')
  t.match(JSON.parse((await gone).payload), { clientid: 'stomp-named', reason: 'normal' }, 'DISCONNECT is a normal disconnect')
  await watcher.endAsync()
})

t.test('ack modes: auto, client (cumulative), client-individual, NACK; unacknowledged messages hold the engine\'s window', async (t) => {
  const mqtt = await node.mqtt({ clientId: 'acks-publisher' })
  const py = stomp()
  const clientId = (await py.connect({ login: 'guest', passcode: 'guest' })).headers?.session ?? ''
  const inflight = async (): Promise<number> => {
    const { body } = await node.http('GET', `/sessions/${clientId}`)
    return ((body as { data?: Array<{ inflight_len: number }> }).data ?? body as Array<{ inflight_len: number }>)[0].inflight_len
  }
  const messagesOf = (sub: string): StompEvent[] => py.messages().filter((m) => m.headers?.subscription === sub)

  await py.run({ op: 'subscribe', destination: 'acks/client', id: 'c', ack: 'client', headers: { receipt: 'c' } })
  await py.run({ op: 'subscribe', destination: 'acks/individual', id: 'i', ack: 'client-individual', headers: { receipt: 'i' } })
  await py.run({ op: 'subscribe', destination: 'acks/auto', id: 'a', ack: 'auto', headers: { receipt: 'a' } })
  await py.next('receipt', (e) => e.headers?.['receipt-id'] === 'a')

  for (const n of [1, 2, 3]) await mqtt.publishAsync('acks/client', `c${n}`, { qos: 1 })
  await until('two client-mode messages', async () => messagesOf('c').length === 2)
  t.equal(await inflight(), 2, 'two unacknowledged messages fill the window (max_inflight 2)')
  t.ok(messagesOf('c').every((m) => m.headers?.ack === m.headers?.['message-id']), '1.2: MESSAGE carries ack')
  t.equal(messagesOf('c').length, 2, 'the third waits')
  await py.run({ op: 'ack', id: messagesOf('c')[1].headers?.ack, receipt: 'ack-c' })
  await py.next('receipt', (e) => e.headers?.['receipt-id'] === 'ack-c')
  await until('the third comes once both are acknowledged by one cumulative ACK', async () => messagesOf('c').length === 3)
  await py.run({ op: 'ack', id: messagesOf('c')[2].headers?.ack })
  await until('window empty', async () => await inflight() === 0)

  for (const n of [1, 2]) await mqtt.publishAsync('acks/individual', `i${n}`, { qos: 1 })
  await until('two individual messages', async () => messagesOf('i').length === 2)
  await py.run({ op: 'ack', id: messagesOf('i')[1].headers?.ack })
  await until('one acknowledged, the other still held', async () => await inflight() === 1)
  await py.run({ op: 'nack', id: messagesOf('i')[0].headers?.ack, receipt: 'nack' })
  await py.next('receipt', (e) => e.headers?.['receipt-id'] === 'nack')
  await until('a NACK settles it too', async () => await inflight() === 0)

  for (const n of [1, 2, 3]) await mqtt.publishAsync('acks/auto', `a${n}`, { qos: 1 })
  await until('auto: all three, never held', async () => messagesOf('a').length === 3)
  t.same(messagesOf('a').map((m) => m.body), ['a1', 'a2', 'a3'])
  t.notOk(messagesOf('a').some((m) => m.headers?.ack !== undefined), 'auto: no ack header')
  await until('window empty', async () => await inflight() === 0)
  await py.stop()
  await mqtt.endAsync()
})

t.test('transactions: COMMIT publishes in order, ABORT drops', async (t) => {
  const mqtt = await node.mqtt({ clientId: 'tx-watcher' })
  await mqtt.subscribeAsync('tx/#', { qos: 1 })
  const got: string[] = []
  mqtt.on('message', (_topic, payload) => got.push(payload.toString()))
  const py = stomp()
  await py.connect({ login: 'guest', passcode: 'guest' })
  await py.run({ op: 'begin', transaction: 't1', headers: { receipt: 'b1' } })
  await py.next('receipt', (e) => e.headers?.['receipt-id'] === 'b1')
  await py.run({ op: 'send', destination: 'tx/a', body: 'one', headers: { transaction: 't1' } })
  await py.run({ op: 'send', destination: 'tx/b', body: 'two', headers: { transaction: 't1', receipt: 'in-tx' } })
  await py.next('receipt', (e) => e.headers?.['receipt-id'] === 'in-tx')
  t.same(got, [], 'nothing before COMMIT')
  await py.run({ op: 'commit', transaction: 't1' })
  await until('committed', async () => got.length === 2)
  t.same(got, ['one', 'two'])

  await py.run({ op: 'begin', transaction: 't2' })
  await py.run({ op: 'send', destination: 'tx/c', body: 'dropped', headers: { transaction: 't2' } })
  await py.run({ op: 'abort', transaction: 't2', headers: { receipt: 'aborted' } })
  await py.next('receipt', (e) => e.headers?.['receipt-id'] === 'aborted')
  await py.run({ op: 'send', destination: 'tx/d', body: 'after' })
  await until('the message after the abort', async () => got.length === 3)
  t.same(got, ['one', 'two', 'after'], 'the aborted SEND never came')

  const from = py.events.length
  await py.run({ op: 'commit', transaction: 'nope' })
  const error = await py.next('error', () => true, from)
  t.match(error, { headers: { message: 'transaction refused' }, body: /transaction nope not found/ })
  await py.next('disconnected', () => true, from)
  await py.stop()
  await mqtt.endAsync()
})

t.test('heart-beats both ways: agreed in CONNECTED, sent by the node, a silent client closed', async (t) => {
  const py = stomp()
  const connected = await py.connect({ login: 'guest', passcode: 'guest', heartbeats: [1000, 1000] })
  t.equal(connected.headers?.['heart-beat'], '1000,1000')
  const from = py.events.length
  await py.next('heartbeat', () => true, from)
  t.equal((await connection(connected.headers?.session ?? ''))?.keepalive, 1, 'the link\'s keep-alive follows the client\'s heart-beat')
  await py.stop()

  const raw = await RawStomp.open(port)
  raw.write(frame('CONNECT', { 'accept-version': '1.2', login: 'guest', passcode: 'guest', 'heart-beat': '1000,0' }))
  t.equal((await raw.next('CONNECTED')).headers['heart-beat'], '0,1000')
  raw.write('\n')
  const error = await raw.next('ERROR')
  t.match(error, { headers: { message: 'heart-beat timeout' } }, 'silent for twice the interval')
  await raw.closed()
})

t.test('kicked through the API: ERROR, closed, counted on the listener', async (t) => {
  const py = stomp()
  const clientId = (await py.connect({ login: 'guest', passcode: 'guest' })).headers?.session ?? ''
  const before = (await stompListener())!
  t.equal(before.current_conns, 1)
  const from = py.events.length
  t.equal((await node.http('DELETE', `/connections/${clientId}`)).status, 200)
  const error = await py.next('error', () => true, from)
  t.match(error, { headers: { message: 'disconnected' }, body: /kicked/ })
  await py.next('disconnected', () => true, from)
  await until('gone from the listing', async () => await connection(clientId) === undefined)
  const after = (await stompListener())!
  t.match(after, { current_conns: 0, shutdown_count: { kicked: 1 } })
  await py.stop()
})

t.test('a reader that stops reading: what it cannot take waits in the engine (not in the gateway); every message arrives, in order, once it reads', async (t) => {
  const mqtt = await node.mqtt({ clientId: 'slow-publisher' })
  const raw = await RawStomp.open(port)
  raw.write(frame('CONNECT', { 'accept-version': '1.2', login: 'guest', passcode: 'guest', 'client-id': 'slow-reader' }) +
    frame('SUBSCRIBE', { id: 's', destination: 'slow/#', receipt: 'r' }))
  await raw.next('RECEIPT')
  raw.socket.pause()
  // about 13 MB: more than the socket buffers take while the reader reads nothing
  const count = 800
  const payload = 'p'.repeat(16 * 1024)
  let acked = 0
  const published = Promise.all([...Array(count).keys()].map(async (i) => {
    await mqtt.publishAsync('slow/t', `${i}:${payload}`, { qos: 1 })
    acked++
  }))
  // the gateway takes from the engine only what its socket takes: the engine queues the rest, and holds the publisher back
  // (a reader that never drains is dropped after Aedes' drain timeout, 60 s: the test resumes well before)
  let last = -1
  await until('the publishing stalls', async () => {
    await new Promise((resolve) => setTimeout(resolve, 1000))
    const stalled = acked === last
    last = acked
    return stalled
  }, 40_000)
  t.ok(acked < count, `held back: ${acked} of ${count} acknowledged while the reader reads nothing`)
  const { body } = await node.http('GET', '/sessions/slow-reader')
  const held = ((body as { data?: Array<{ mqueue_len: number }> }).data ?? body as Array<{ mqueue_len: number }>)[0]
  t.ok(held.mqueue_len > 0, `the rest wait in the engine's queue of the session (${held.mqueue_len})`)
  raw.socket.resume()
  await published
  await raw.log.next(() => raw.log.events.filter((f) => f.command === 'MESSAGE').length === count, `${count} messages`, 0, 45_000)
  const numbers = raw.log.events.filter((f) => f.command === 'MESSAGE').map((f) => Number(f.body.split(':')[0]))
  t.same(numbers, [...Array(count).keys()], 'every message, in order')
  raw.destroy()
  await mqtt.endAsync()
})

t.test('a second connection with the same client-id takes the session over', async (t) => {
  const first = await RawStomp.open(port)
  first.write(frame('CONNECT', { 'accept-version': '1.2', login: 'guest', passcode: 'guest', 'client-id': 'twice' }))
  await first.next('CONNECTED')
  const second = await RawStomp.open(port)
  second.write(frame('CONNECT', { 'accept-version': '1.2', login: 'guest', passcode: 'guest', 'client-id': 'twice' }))
  await second.next('CONNECTED')
  t.match(await first.next('ERROR'), { body: /taken over/ })
  await first.closed()
  second.destroy()
})

t.test('raw frames: split byte by byte, several in one write, malformed and oversized refused and counted', async (t) => {
  const mqtt = await node.mqtt({ clientId: 'raw-peer' })
  await mqtt.subscribeAsync('raw/#', { qos: 1 })
  const raw = await RawStomp.open(port)
  const connect = frame('CONNECT', { 'accept-version': '1.2', login: 'guest', passcode: 'guest' })
  for (const ch of connect) raw.write(ch)
  await raw.next('CONNECTED')
  const arrived = mqttMessage(mqtt, 'raw/one')
  // a SUBSCRIBE and two SENDs in one write, with heart-beat EOLs between frames
  raw.write(frame('SUBSCRIBE', { id: '7', destination: 'raw/#', receipt: 'r-sub' }) + '\n\n' +
    frame('SEND', { destination: 'raw/one', receipt: 'r1' }, 'first') + '\r\n' +
    frame('SEND', { destination: 'raw/two', 'content-length': '6' }, 'sec\0nd'))
  t.equal((await arrived).payload, 'first')
  await raw.next('RECEIPT')
  const second = await raw.log.next((f) => f.command === 'MESSAGE' && f.headers.destination === 'raw/two', 'raw/two back')
  t.equal(second.body, 'sec\0nd', 'content-length carries a NUL')

  const malformedBefore = await metric('stomp/frames/malformed')
  raw.write(frame('SEND', { destination: 'raw/x', 'bad\\escape': '1' }))
  t.match(await raw.next('ERROR'), { headers: { message: 'malformed frame' }, body: /undefined escape sequence/ })
  await raw.closed()
  t.equal(await metric('stomp/frames/malformed'), malformedBefore + 1)

  const tooLargeBefore = await metric('stomp/frames/too_large')
  const big = await RawStomp.open(port)
  big.write(connect)
  await big.next('CONNECTED')
  big.write(frame('SEND', { destination: 'raw/big' }, 'x'.repeat(1001)))
  t.match(await big.next('ERROR'), { headers: { message: 'frame too large' }, body: /over 1000 \(stomp\.frame\.max_body_length\)|over 1000 bytes/ })
  await big.closed()
  t.equal(await metric('stomp/frames/too_large'), tooLargeBefore + 1)

  const junk = await RawStomp.open(port)
  junk.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n')
  t.match(await junk.next('ERROR'), { body: /not a STOMP command|unknown command/ })
  await junk.closed()

  const early = await RawStomp.open(port)
  early.write(frame('SEND', { destination: 'raw/x' }, 'no connect'))
  t.match(await early.next('ERROR'), { headers: { message: 'not connected' } })
  await early.closed()

  const versions = await RawStomp.open(port)
  versions.write(frame('CONNECT', { 'accept-version': '2.0' }))
  t.match(await versions.next('ERROR'), { headers: { version: '1.0,1.1,1.2' } })
  await versions.closed()

  t.ok(await metric('stomp/frames/received') > 0, 'frames counted')
  t.ok(await metric('stomp/frames/sent') > 0)
  await mqtt.endAsync()
})

t.test('SEND and SUBSCRIBE errors say why', async (t) => {
  for (const [bad, message] of [
    [frame('SEND', { destination: 'a/+' }, 'x'), 'invalid destination'],
    [frame('SEND', {}, 'x'), 'invalid destination'],
    [frame('SUBSCRIBE', { destination: 'a/#/b', id: '1' }), 'invalid destination'],
    [frame('SUBSCRIBE', { destination: 'a' }), 'missing id'],
    [frame('SUBSCRIBE', { destination: 'a', id: '1', ack: 'sometimes' }), 'invalid ack'],
    [frame('SUBSCRIBE', { destination: 'a', id: '1' }) + frame('SUBSCRIBE', { destination: 'b', id: '1' }), 'subscription id in use'],
    [frame('ACK', {}), 'missing id'],
    [frame('BEGIN', {}), 'missing transaction'],
    [frame('CONNECT', { 'accept-version': '1.2' }), 'already connected'],
    [frame('SEND', { destination: 'a', transaction: 'none', receipt: 'r' }), 'transaction refused']
  ] as const) {
    const raw = await RawStomp.open(port)
    raw.write(frame('CONNECT', { 'accept-version': '1.2', login: 'guest', passcode: 'guest', 'heart-beat': '0,0' }) + bad)
    const error = await raw.next('ERROR')
    t.equal(error.headers.message, message, bad.split('\n')[0])
    await raw.closed()
  }
  // a destination longer than an MQTT topic can be (65535 bytes), where the header limit lets it through (a live setting)
  const path = `/nodes/${node.node.name}/plugin_configs/broker_stomp`
  t.equal((await node.http('PUT', path, { 'stomp.frame.max_header_length': '100000' })).status, 200)
  const raw = await RawStomp.open(port)
  raw.write(frame('CONNECT', { 'accept-version': '1.2', login: 'guest', passcode: 'guest' }) + frame('SEND', { destination: 'a'.repeat(70_000) }, 'x'))
  t.match(await raw.next('ERROR'), { headers: { message: 'invalid destination' } })
  await raw.closed()
  t.equal((await node.http('PUT', path, { 'stomp.frame.max_header_length': null })).status, 200)
})

t.test('unloaded through the API: its connections close and its listener goes; loaded again it serves', async (t) => {
  const py = stomp()
  await py.connect({ login: 'guest', passcode: 'guest' })
  const from = py.events.length
  t.equal((await node.http('PUT', `/nodes/${node.node.name}/plugins/broker_stomp/unload`)).status, 200)
  await py.next('disconnected', () => true, from)
  t.equal(await stompListener(), undefined, 'no stomp:tcp listener')
  t.same(((await node.http('GET', '/connections')).body as { items: Connection[] }).items.filter((c) => c.proto_name === 'STOMP'), [], 'no gateway client left')
  t.equal((await node.http('PUT', `/nodes/${node.node.name}/plugins/broker_stomp/load`)).status, 200)
  port = Number((await stompListener())!.listen_on.split(':')[1])
  const again = stomp()
  t.equal((await again.connect({ login: 'guest', passcode: 'guest' })).event, 'connected')
  await again.stop()
  await py.stop()
})
