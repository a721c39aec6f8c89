// Malformed and out-of-range packets on the wire (issues 14 #1, #9 and 15 #1,
// #2): every one is refused with its reason code (CONNACK for a CONNECT,
// DISCONNECT afterwards in MQTT 5, a close in 3.x), the connection closes and
// the node keeps serving. Packets are written as raw bytes, since MQTT.js
// neither sends repeated properties nor ill-formed strings.
import { once } from 'node:events'
import { randomBytes } from 'node:crypto'
import { connect as netConnect } from 'node:net'
import { readFile, rm } from 'node:fs/promises'
import t from 'tap'
import mqttPacket, { type IConnackPacket, type IDisconnectPacket, type Packet } from 'mqtt-packet'
import WebSocket from 'ws'
import { freePort, spawnBroker, startBroker, tempDir } from './helpers/broker.js'
import { closeAll, connect, nextMessages } from './helpers/mqtt.js'
import { RawClient } from './helpers/raw-client.js'

type Version = 4 | 5

const encode = (packet: Packet, version: Version): Buffer => mqttPacket.generate(packet, { protocolVersion: version })

/** `wire` with the first occurrence of `from` replaced by `to` (same length, so no length field changes). */
function swapBytes (wire: Buffer, from: Buffer, to: Buffer): Buffer {
  const at = wire.indexOf(from)
  if (at < 0 || from.length !== to.length) throw new Error('placeholder not found')
  return Buffer.concat([wire.subarray(0, at), to, wire.subarray(at + from.length)])
}

/** An empty User Property: pads raw properties to the 5 bytes the smallest placeholder takes. */
const EMPTY_USER_PROPERTY = [0x26, 0, 0, 0, 0]

/**
 * Raw property bytes (repeated, out of range, misplaced: what mqtt-packet will
 * not generate) put into a packet: the packet carries a User Property of the
 * same size as placeholder (`userProperties`), which `into` swaps for them.
 */
function rawProperties (bytes: number[]): { userProperties: Record<string, string>, into: (wire: Buffer) => Buffer } {
  const raw = Buffer.from(bytes.length < 5 ? [...bytes, ...EMPTY_USER_PROPERTY] : bytes)
  const filler = 'Z'.repeat(raw.length - 5)
  const placeholder = Buffer.concat([Buffer.from([0x26, 0, 0, 0, filler.length]), Buffer.from(filler)])
  return { userProperties: { '': filler }, into: (wire) => swapBytes(wire, placeholder, raw) }
}

/** A string placeholder's bytes swapped for raw ones (ill-formed UTF-8, U+0000). */
const rawString = (placeholder: string, bytes: number[]) => (wire: Buffer): Buffer => swapBytes(wire, Buffer.from(placeholder), Buffer.from(bytes))

function connectPacket (version: Version, fields: Partial<mqttPacket.IConnectPacket> = {}): mqttPacket.IConnectPacket {
  return { cmd: 'connect', protocolId: 'MQTT', protocolVersion: version, clean: true, keepalive: 60, clientId: '', ...fields } as mqttPacket.IConnectPacket
}

/** Resolves with what the broker answered to a raw CONNECT and whether it then closed. */
async function refusedConnect (port: number, version: Version, wire: Buffer): Promise<{ connack?: IConnackPacket, closed: boolean }> {
  const raw = await RawClient.open(port, version)
  raw.socket.write(wire)
  const connack = await raw.next('connack').catch(() => undefined) as IConnackPacket | undefined
  const closed = await raw.waitClosed()
  raw.end()
  return { connack, closed }
}

/** A connected raw client writes `wire`; resolves with the broker's DISCONNECT (MQTT 5) and whether it closed. */
async function refusedAfterConnect (port: number, version: Version, wire: Buffer): Promise<{ disconnect?: IDisconnectPacket, closed: boolean }> {
  const raw = await RawClient.open(port, version)
  const connack = await raw.connect()
  if ((version === 5 ? connack.reasonCode : connack.returnCode) !== 0) throw new Error('connect refused')
  raw.socket.write(wire)
  const disconnect = version === 5 ? await raw.next('disconnect').catch(() => undefined) as IDisconnectPacket | undefined : undefined
  const closed = await raw.waitClosed()
  raw.end()
  return { disconnect, closed }
}

let roundTrips = 0
/** The node still serves: a fresh client publishes to itself and gets the message. */
async function roundTrip (url: string): Promise<boolean> {
  const topic = `alive/${++roundTrips}`
  const client = await connect(url)
  try {
    await client.subscribeAsync(topic, { qos: 1 })
    const got = nextMessages(client, 1)
    await client.publishAsync(topic, 'ok', { qos: 1 })
    return (await got)[0].payload === 'ok'
  } finally {
    await closeAll(client)
  }
}

t.test('a repeated Session Expiry Interval is refused with 0x82 and the node keeps running (issue 14 #1)', async (t) => {
  const dataDir = await tempDir()
  const node = await spawnBroker(dataDir)
  t.teardown(async () => {
    node.child.kill('SIGKILL')
    await rm(dataDir, { recursive: true, force: true })
  })
  const twice = rawProperties([0x11, 0, 0, 0, 10, 0x11, 0, 0, 0, 20])
  const inConnect = await refusedConnect(node.port, 5, twice.into(encode(connectPacket(5, { clientId: 'twice', properties: { userProperties: twice.userProperties } }), 5)))
  t.equal(inConnect.connack?.reasonCode, 0x82, 'CONNECT: CONNACK 0x82 protocol error')
  t.ok(inConnect.closed, '…and closed')

  const inDisconnect = await refusedAfterConnect(node.port, 5,
    twice.into(encode({ cmd: 'disconnect', reasonCode: 0, properties: { userProperties: twice.userProperties } }, 5)))
  t.equal(inDisconnect.disconnect?.reasonCode, 0x82, 'DISCONNECT: answered with DISCONNECT 0x82')
  t.ok(inDisconnect.closed, '…and closed')

  t.ok(await roundTrip(`mqtt://127.0.0.1:${node.port}`), 'a fresh client still does a pub/sub round trip')
  t.equal(node.child.exitCode, null, 'the process is still running')
})

t.test('properties repeated, misplaced or out of range are refused with their reason code (issue 14 #1)', async (t) => {
  const broker = await startBroker({ 'zone.external.max_topic_alias': 10 })
  t.teardown(broker.stop)
  const port = broker.port()
  const atConnect: Array<[string, number[], number, 'connect' | 'will']> = [
    ['Request Problem Information 2', [0x17, 2], 0x82, 'connect'],
    ['Request Response Information twice', [0x19, 1, 0x19, 1], 0x82, 'connect'],
    ['Topic Alias Maximum twice, first 0', [0x22, 0, 0, 0x22, 0, 5], 0x82, 'connect'],
    ['Maximum Packet Size 0', [0x27, 0, 0, 0, 0], 0x82, 'connect'],
    ['Receive Maximum 0', [0x21, 0, 0], 0x82, 'connect'],
    ['Server Keep Alive (a CONNACK property)', [0x13, 0, 10], 0x81, 'connect'],
    ['Will Delay Interval twice', [0x18, 0, 0, 0, 1, 0x18, 0, 0, 0, 2], 0x82, 'will'],
    ['will Payload Format Indicator 2', [0x01, 2], 0x82, 'will']
  ]
  for (const [name, bytes, code, where] of atConnect) {
    const props = rawProperties(bytes)
    const will = { topic: 'w', payload: Buffer.from('x'), qos: 0 as const, retain: false }
    const packet = where === 'connect'
      ? connectPacket(5, { properties: { userProperties: props.userProperties } })
      : connectPacket(5, { will: { ...will, properties: { userProperties: props.userProperties } } })
    const { connack, closed } = await refusedConnect(port, 5, props.into(encode(packet, 5)))
    t.equal(connack?.reasonCode, code, `${name}: CONNACK 0x${code.toString(16)}`)
    t.ok(closed, `${name}: closed`)
  }

  const publish = (bytes: number[]): Buffer => {
    const props = rawProperties(bytes)
    return props.into(encode({ cmd: 'publish', topic: 'p', payload: Buffer.from('x'), qos: 0, dup: false, retain: false, properties: { userProperties: props.userProperties } }, 5))
  }
  const subscribe = (bytes: number[]): Buffer => {
    const props = rawProperties(bytes)
    return props.into(encode({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 's', qos: 0 }], properties: { userProperties: props.userProperties } }, 5))
  }
  const puback = (bytes: number[]): Buffer => {
    const props = rawProperties(bytes)
    return props.into(encode({ cmd: 'puback', messageId: 7, reasonCode: 0, properties: { userProperties: props.userProperties } }, 5))
  }
  const later: Array<[string, Buffer, number]> = [
    ['PUBLISH with a Subscription Identifier', publish([0x0b, 1]), 0x82],
    ['PUBLISH with Message Expiry Interval twice, first 0', publish([0x02, 0, 0, 0, 0, 0x02, 0, 0, 0, 9]), 0x82],
    ['PUBLISH with Payload Format Indicator 2', publish([0x01, 2]), 0x82],
    ['PUBLISH with Topic Alias 0', publish([0x23, 0, 0]), 0x94],
    ['PUBLISH with Topic Alias 11 (maximum 10)', publish([0x23, 0, 11]), 0x94],
    ['PUBLISH with a Response Topic holding a wildcard', publish([0x08, 0, 3, 0x61, 0x2f, 0x23]), 0x82],
    ['SUBSCRIBE with Subscription Identifier 0', subscribe([0x0b, 0]), 0x82],
    ['SUBSCRIBE with two Subscription Identifiers', subscribe([0x0b, 1, 0x0b, 2]), 0x82],
    ['PUBACK with a Reason String twice', puback([0x1f, 0, 1, 0x61, 0x1f, 0, 1, 0x62]), 0x82],
    ['DISCONNECT with a Session Expiry Interval after a CONNECT with 0', encode({ cmd: 'disconnect', reasonCode: 0, properties: { sessionExpiryInterval: 5 } }, 5), 0x82]
  ]
  for (const [name, wire, code] of later) {
    const { disconnect, closed } = await refusedAfterConnect(port, 5, wire)
    t.equal(disconnect?.reasonCode, code, `${name}: DISCONNECT 0x${code.toString(16)}`)
    t.ok(closed, `${name}: closed`)
  }

  // the largest timer inputs are valid: clamped, or re-armed past setTimeout's limit
  const huge = await RawClient.open(port, 5)
  t.teardown(() => huge.end())
  const connack = await huge.connect({
    clientId: 'huge',
    keepalive: 65535,
    properties: { sessionExpiryInterval: 0xfffffffe },
    will: { topic: 'w/huge', payload: Buffer.from('x'), qos: 0, retain: false, properties: { willDelayInterval: 0xffffffff, messageExpiryInterval: 0xffffffff } }
  })
  t.equal(connack.reasonCode, 0, 'the largest Session Expiry, Will Delay, Message Expiry and keepalive are accepted')
  t.equal(connack.properties?.sessionExpiryInterval, 7200, '…with the Session Expiry clamped to zone.external.session_expiry_interval')
  huge.send({ cmd: 'publish', topic: 'huge/expiry', payload: 'x', qos: 1, messageId: 1, dup: false, retain: true, properties: { messageExpiryInterval: 0xffffffff } })
  await huge.next('puback')
  huge.end()
  await huge.waitClosed()
  t.ok(await roundTrip(`mqtt://127.0.0.1:${port}`), 'the node still serves')
})

t.test('a restored session timer longer than 24.8 days does not fire at once (issue 14 #1, timer inputs)', async (t) => {
  const dataDir = await tempDir()
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  const settings = { 'zone.external.session_expiry_interval': '60d' }
  let broker = await startBroker(settings, ['tcp'], dataDir)
  const before = await RawClient.open(broker.port(), 5)
  await before.connect({ clientId: 'month', properties: { sessionExpiryInterval: 30 * 24 * 3600 } })
  before.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'kept/month', qos: 1 }] })
  await before.next('suback')
  before.end()
  await before.waitClosed()
  await broker.stop()
  broker = await startBroker(settings, ['tcp'], dataDir)
  t.teardown(broker.stop)
  // the restored 30-day timer is armed now; one past setTimeout's limit used to fire after 1 ms
  await new Promise<void>((resolve) => setImmediate(resolve))
  const back = await RawClient.open(broker.port(), 5)
  t.teardown(() => back.end())
  const connack = await back.connect({ clientId: 'month', clean: false, properties: { sessionExpiryInterval: 60 } })
  t.equal(connack.sessionPresent, true, 'the 30-day session is still there after the restart')
})

t.test('strings that are not well-formed UTF-8 or hold U+0000 are malformed (issue 15 #1)', async (t) => {
  const broker = await startBroker()
  t.teardown(broker.stop)
  const port = broker.port()
  const url = `mqtt://127.0.0.1:${port}`
  const watcher = await connect(url)
  t.teardown(() => closeAll(watcher))
  await watcher.subscribeAsync('#')
  const marker = await connect(url)
  t.teardown(() => closeAll(marker))

  const publishWith = (version: Version, topic: string): Buffer =>
    encode({ cmd: 'publish', topic, payload: Buffer.from('x'), qos: 0, dup: false, retain: false }, version)
  const topics: Array<[string, Version, Buffer]> = [
    ['v5 PUBLISH topic with an overlong encoding', 5, rawString('XX', [0xc0, 0xaf])(publishWith(5, 'bad/XX'))],
    ['v5 PUBLISH topic with an encoded surrogate U+D800', 5, rawString('XXX', [0xed, 0xa0, 0x80])(publishWith(5, 'bad/XXX'))],
    ['v5 PUBLISH topic with U+0000', 5, publishWith(5, 'bad/\u0000')],
    ['3.1.1 PUBLISH topic with U+0000', 4, publishWith(4, 'bad/\u0000x')],
    ['3.1.1 PUBLISH topic with byte 0xFF', 4, rawString('X', [0xff])(publishWith(4, 'bad/X'))]
  ]
  for (const [name, version, wire] of topics) {
    const delivered = nextMessages(watcher, 1)
    const { disconnect, closed } = await refusedAfterConnect(port, version, wire)
    if (version === 5) t.equal(disconnect?.reasonCode, 0x81, `${name}: DISCONNECT 0x81 malformed packet`)
    t.ok(closed, `${name}: closed`)
    await marker.publishAsync('marker', name)
    const [first] = await delivered
    t.same([first.topic, first.payload], ['marker', name], `${name}: not routed to a '#' subscriber`)
  }

  const filter = rawString('XX', [0xc0, 0x80])(encode({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'f/XX', qos: 0 }] }, 5))
  const subscribed = await refusedAfterConnect(port, 5, filter)
  t.equal(subscribed.disconnect?.reasonCode, 0x81, 'v5 SUBSCRIBE filter with ill-formed UTF-8: DISCONNECT 0x81')
  t.ok(subscribed.closed, '…closed')
  const filter311 = encode({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'f/\u0000', qos: 0 }] }, 4)
  t.ok((await refusedAfterConnect(port, 4, filter311)).closed, '3.1.1 SUBSCRIBE filter with U+0000: closed')

  const will = { topic: 'will/XXX', payload: Buffer.from('x'), qos: 0 as const, retain: false }
  const connects: Array<[string, Version, Buffer]> = [
    ['v5 client id', 5, rawString('XX', [0xc0, 0xaf])(encode(connectPacket(5, { clientId: 'id-XX' }), 5))],
    ['v5 user name with U+0000', 5, encode(connectPacket(5, { clientId: 'u', username: 'a\u0000b' }), 5)],
    ['v5 will topic', 5, rawString('XXX', [0xed, 0xbf, 0xbf])(encode(connectPacket(5, { clientId: 'w', will }), 5))],
    ['3.1.1 client id', 4, rawString('XX', [0xc0, 0xaf])(encode(connectPacket(4, { clientId: 'id-XX' }), 4))]
  ]
  for (const [name, version, wire] of connects) {
    const { connack, closed } = await refusedConnect(port, version, wire)
    if (version === 5) t.equal(connack?.reasonCode, 0x81, `${name}: CONNACK 0x81`)
    else t.equal(connack, undefined, `${name}: no CONNACK`)
    t.ok(closed, `${name}: closed`)
  }
  t.ok(await roundTrip(url), 'the node still serves')
})

t.test('an unsupported protocol level is answered before the close (issue 15 #2)', async (t) => {
  const broker = await startBroker()
  t.teardown(broker.stop)
  const port = broker.port()
  const level4 = encode(connectPacket(4, { clientId: 'level' }), 4)
  const level9 = swapBytes(level4, Buffer.from('\u0000\u0004MQTT\u0004'), Buffer.from('\u0000\u0004MQTT\u0009'))
  const socket = await RawClient.open(port, 4)
  const bytes: Buffer[] = []
  socket.socket.on('data', (chunk: Buffer) => bytes.push(chunk))
  socket.socket.write(level9)
  t.ok(await socket.waitClosed(), 'level 9: closed')
  t.same([...Buffer.concat(bytes)], [0x20, 0x02, 0x00, 0x01], 'level 9: CONNACK 0x01 unacceptable protocol level (MQTT 3.1.1 form)')

  const misnamed = await refusedConnect(port, 5, encode(connectPacket(5, { protocolId: 'MQIsdp', clientId: 'misnamed' }), 5))
  t.equal(misnamed.connack?.reasonCode, 0x84, 'level 5 under the 3.1 protocol name: CONNACK 0x84 unsupported protocol version')
  t.ok(misnamed.closed, '…closed')
  t.ok(await roundTrip(`mqtt://127.0.0.1:${port}`), 'the node still serves')
})

/** Peak resident memory of a process (VmHWM), in bytes. */
async function peakRss (pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)![1]) * 1024
}

/** Opens an MQTT WebSocket, sends one binary message of `size` bytes; resolves with the close code. */
async function sendLargeMessage (url: string, size: number, options: WebSocket.ClientOptions = {}): Promise<number> {
  const ws = new WebSocket(url, 'mqtt', options)
  await once(ws, 'open')
  const closed = once(ws, 'close') as Promise<[number]>
  ws.on('error', () => {})
  ws.send(Buffer.alloc(size, 0x30))
  const [code] = await closed
  return code
}

/**
 * Over a raw socket: upgrades to MQTT over WebSocket, announces one binary
 * message of `size` bytes and sends it in pieces until the broker answers (a
 * close frame or a close). Resolves with the close code the broker sent (0:
 * none) and how many bytes of the message went out.
 */
async function announceLargeMessage (port: number, size: number): Promise<{ code: number, sent: number }> {
  const socket = netConnect(port, '127.0.0.1')
  socket.on('error', () => {})
  await once(socket, 'connect')
  let received = Buffer.alloc(0)
  let upgraded = -1
  let answer: () => void = () => {}
  const answered = new Promise<void>((resolve) => { answer = resolve })
  socket.on('data', (data: Buffer) => {
    received = Buffer.concat([received, data])
    if (upgraded < 0 && received.includes('\r\n\r\n')) {
      upgraded = received.indexOf('\r\n\r\n') + 4
      answer()
    } else if (upgraded >= 0 && received.length > upgraded) answer()
  })
  socket.on('close', () => answer())
  socket.write(`GET /mqtt HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\n` +
    'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: mqtt\r\n\r\n')
  await answered
  const stopped = new Promise<void>((resolve) => { answer = resolve })
  if (received.length > upgraded) answer()
  // FIN + binary, masked, 64-bit length, mask key 0 (the payload goes out as is)
  const header = Buffer.alloc(14)
  header[0] = 0x82
  header[1] = 0x80 | 127
  header.writeBigUInt64BE(BigInt(size), 2)
  socket.write(header)
  const piece = Buffer.alloc(256 * 1024, 0x30)
  let sent = 0
  let done = false
  void stopped.then(() => { done = true })
  while (sent < size && !done && !socket.destroyed) {
    const written = socket.write(piece)
    sent += piece.length
    await Promise.race([stopped, written ? new Promise<void>((resolve) => setImmediate(resolve)) : once(socket, 'drain')])
  }
  await Promise.race([stopped, once(socket, 'close')])
  const frame = received.subarray(upgraded)
  socket.destroy()
  return { code: frame[0] === 0x88 && frame.length >= 4 ? frame.readUInt16BE(2) : 0, sent }
}

t.test('a WebSocket message larger than mqtt.max_packet_size is not buffered (issue 14 #9)', async (t) => {
  const dataDir = await tempDir()
  const wsPort = await freePort()
  const node = await spawnBroker(dataDir, { 'listener.ws.external': `127.0.0.1:${wsPort}`, 'mqtt.max_packet_size': '64KB' })
  t.teardown(async () => {
    node.child.kill('SIGKILL')
    await rm(dataDir, { recursive: true, force: true })
  })
  const size = 32 * 1024 * 1024
  const before = await peakRss(node.child.pid!)
  const results = await Promise.all([1, 2, 3, 4].map(async () => await announceLargeMessage(wsPort, size)))
  t.same(results.map((r) => r.code), [1009, 1009, 1009, 1009], 'each connection is closed with 1009 (message too big)')
  t.ok(results.every((r) => r.sent < size), 'each is closed before the whole message is sent')
  const grown = (await peakRss(node.child.pid!)) - before
  t.ok(grown < 32 * 1024 * 1024, `peak RSS grew by ${Math.round(grown / 1024 / 1024)} MiB for four 32 MiB messages`)
  t.ok(await roundTrip(`ws://127.0.0.1:${wsPort}/mqtt`), 'MQTT over WebSocket still works')
  t.equal(node.child.exitCode, null, 'the process is still running')
})

t.test('secure WebSocket has the same cap (issue 14 #9)', async (t) => {
  const broker = await startBroker({ 'mqtt.max_packet_size': '64KB' }, ['wss'])
  t.teardown(broker.stop)
  const code = await sendLargeMessage(`wss://127.0.0.1:${broker.port('wss')}/mqtt`, 2 * 1024 * 1024, { rejectUnauthorized: false })
  t.equal(code, 1009, 'closed with 1009 (message too big)')
})
