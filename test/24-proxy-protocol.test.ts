// Real client addresses behind a load balancer (issue 10): PROXY protocol v1 and
// v2 on the TCP and TLS listeners, X-Forwarded-For on WebSocket. The address a
// header gives is what the connections API, an ACL ipaddr rule, a banned
// ip_address, HTTP auth (%a) and $SYS presence see; a connection without a
// valid header is closed before any MQTT is read.
import { once } from 'node:events'
import { rm, writeFile } from 'node:fs/promises'
import { connect as netConnect } from 'node:net'
import { join } from 'node:path'
import { connect as tlsConnect } from 'node:tls'
import type { IConnectPacket, IPubackPacket, IPublishPacket } from 'mqtt-packet'
import t from 'tap'
import { startApiNode, type ApiNode } from '../plugins/broker_management/test/api.js'
import { startAuthServer, type AuthServer } from '../plugins/broker_auth_http/test/server.js'
import { engineClient } from '../lib/engine/internals.js'
import { connInfo } from '../lib/listeners/conn-info.js'
import { startBroker, tempDir } from './helpers/broker.js'
import { closeAll, connect } from './helpers/mqtt.js'
import { RawClient } from './helpers/raw-client.js'

const NODE = 'broker@127.0.0.1'
const SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a])

const v1 = (address: string, port: number): Buffer =>
  Buffer.from(`PROXY ${address.includes(':') ? 'TCP6' : 'TCP4'} ${address} ${address.includes(':') ? '::1' : '127.0.0.1'} ${port} 1883\r\n`)

/** A v2 PROXY header over IPv4 or IPv6 (with a NOOP TLV to skip), or LOCAL when no address is given. */
function v2 (address?: string, port = 0): Buffer {
  if (address === undefined) return Buffer.concat([SIGNATURE, Buffer.from([0x20, 0x00, 0x00, 0x00])])
  const six = address.includes(':')
  const bytes = six ? ipv6Bytes(address) : Buffer.from(address.split('.').map(Number))
  const ports = Buffer.alloc(4)
  ports.writeUInt16BE(port, 0)
  ports.writeUInt16BE(1883, 2)
  const body = Buffer.concat([bytes, Buffer.alloc(bytes.length), ports, Buffer.from([0x04, 0x00, 0x01, 0x00])])
  const head = Buffer.from([0x21, six ? 0x21 : 0x11, 0, 0])
  head.writeUInt16BE(body.length, 2)
  return Buffer.concat([SIGNATURE, head, body])
}

function ipv6Bytes (text: string): Buffer {
  const [head, tail] = text.split('::')
  const h = head === '' ? [] : head.split(':')
  const tl = tail === undefined || tail === '' ? [] : tail.split(':')
  const groups = [...h, ...Array(8 - h.length - tl.length).fill('0'), ...tl]
  const b = Buffer.alloc(16)
  groups.forEach((g, i) => b.writeUInt16BE(parseInt(g, 16), i * 2))
  return b
}

const sleep = async (ms: number): Promise<void> => await new Promise((resolve) => setTimeout(resolve, ms))

/** A raw MQTT 5 client (test/helpers/raw-client.ts) over TCP or TLS, after whatever header the test sends. */
const Wire = {
  /** Opens TCP, writes the header (each part as its own segment, a pause between) and returns the client. */
  async tcp (port: number, header: Buffer | Buffer[] = []): Promise<RawClient> {
    const socket = netConnect(port, '127.0.0.1')
    socket.setNoDelay(true)
    socket.on('error', () => {})
    await once(socket, 'connect')
    const parts = Array.isArray(header) ? header : [header]
    for (const [i, part] of parts.entries()) {
      if (i > 0) await sleep(30)
      socket.write(part)
    }
    return RawClient.over(socket, 5)
  },

  /** Opens TCP, writes the header, then runs the TLS handshake over the same connection. */
  async tls (port: number, header: Buffer): Promise<RawClient> {
    const socket = netConnect(port, '127.0.0.1')
    socket.on('error', () => {})
    await once(socket, 'connect')
    socket.write(header)
    const secure = tlsConnect({ socket, rejectUnauthorized: false })
    await once(secure, 'secureConnect')
    return RawClient.over(secure, 5)
  }
}

let api: ApiNode
let http: AuthServer
let dir: string

t.before(async () => {
  http = await startAuthServer()
  dir = await tempDir()
  const acl = join(dir, 'acl.conf')
  await writeFile(acl, '{deny, {ipaddr, "203.0.113.0/24"}, publish, ["#"]}.\n{allow, all}.\n')
  api = await startApiNode({
    'listener.tcp.external.proxy_protocol': 'on',
    'listener.tcp.external.proxy_protocol_timeout': '1s',
    'listener.ssl.external.proxy_protocol': 'on',
    'listener.ws.external.proxy_address_header': 'X-Forwarded-For',
    'listener.ws.external.proxy_port_header': 'X-Forwarded-Port',
    'mqtt.acl_file': acl,
    'mqtt.cache_acl': 'false'
  }, {}, ['tcp', 'ssl', 'ws'], {
    broker_auth_http: { 'auth.http.auth_req': http.url('/auth'), 'auth.http.auth_req.params': 'clientid=%c,ipaddr=%a' },
    broker_modules: {}
  })
})

t.teardown(async () => {
  await api?.stop()
  await http?.close()
  if (dir !== undefined) await rm(dir, { recursive: true, force: true })
})

async function connection (clientId: string): Promise<Record<string, unknown> | undefined> {
  const { body } = await api.call('GET', `/connections/${clientId}`)
  return (body as Array<Record<string, unknown>>)[0]
}

/** What the HTTP auth server was sent as %a for this client id. */
function authAddress (clientId: string): string | undefined {
  const seen = http.seen.filter((s) => (s.form.clientid ?? s.query.clientid) === clientId).at(-1)
  return seen === undefined ? undefined : seen.form.ipaddr ?? seen.query.ipaddr
}

const tcpPort = (): number => api.broker.port('tcp')
const gate = (protocol: string): { proxyRefused: number } => api.broker.node.listeners.find((l) => l.protocol === protocol)!.gate.counters

t.test('PROXY v1 and v2 headers set the address the API, HTTP auth (%a) and $SYS presence see', async (t) => {
  const watcher = await Wire.tcp(tcpPort(), v2())
  t.teardown(() => watcher.end())
  t.equal((await watcher.connect({ clientId: 'watcher', username: 'u' })).reasonCode, 0, 'a LOCAL header (health check form) connects')
  watcher.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: `$SYS/brokers/${NODE}/clients/+/connected`, qos: 0 }] })
  await watcher.next('suback')

  const cases: Array<[string, Buffer, string, number]> = [
    ['pp-v1-ipv4', v1('203.0.113.7', 51234), '203.0.113.7', 51234],
    ['pp-v1-ipv6', v1('2001:db8::42', 40000), '2001:db8::42', 40000],
    ['pp-v2-ipv4', v2('198.51.100.23', 61000), '198.51.100.23', 61000],
    ['pp-v2-ipv6', v2('2001:db8:0:0:1::9', 1024), '2001:db8::1:0:0:9', 1024]
  ]
  for (const [clientId, header, address, port] of cases) {
    const wire = await Wire.tcp(tcpPort(), header)
    t.teardown(() => wire.end())
    t.equal((await wire.connect({ clientId: clientId, username: 'u' })).reasonCode, 0, `${clientId} connects`)
    t.match(await connection(clientId), { client_id: clientId, ipaddress: address, port }, `${clientId}: the API shows the header's address and port`)
    t.equal(authAddress(clientId), address, `${clientId}: HTTP auth %a`)
    const notice = await watcher.next('publish') as IPublishPacket
    t.equal(notice.topic, `$SYS/brokers/${NODE}/clients/${clientId}/connected`)
    t.equal(JSON.parse(notice.payload.toString()).ipaddress, address, `${clientId}: $SYS presence`)
  }

  const local = await Wire.tcp(tcpPort(), v2())
  t.teardown(() => local.end())
  await local.connect({ clientId: 'pp-local', username: 'u' })
  t.match(await connection('pp-local'), { ipaddress: '127.0.0.1', port: local.socket.localPort }, 'LOCAL keeps the socket address')
  const unknown = await Wire.tcp(tcpPort(), Buffer.from('PROXY UNKNOWN\r\n'))
  t.teardown(() => unknown.end())
  await unknown.connect({ clientId: 'pp-unknown', username: 'u' })
  t.match(await connection('pp-unknown'), { ipaddress: '127.0.0.1', port: unknown.socket.localPort }, 'v1 UNKNOWN keeps the socket address')
})

t.test('an ACL ipaddr rule applies to the proxied address, not to the load balancer', async (t) => {
  const publishAck = async (address: string, clientId: string): Promise<number> => {
    const wire = await Wire.tcp(tcpPort(), v2(address, 5000))
    t.teardown(() => wire.end())
    await wire.connect({ clientId: clientId, username: 'u' })
    wire.send({ cmd: 'publish', topic: 'data/x', payload: 'p', qos: 1, messageId: 7, retain: false, dup: false } as IPublishPacket)
    return (await wire.next('puback') as IPubackPacket).reasonCode ?? 0
  }
  t.equal(await publishAck('203.0.113.50', 'acl-in-range'), 0x87, 'denied: 203.0.113.50 is in 203.0.113.0/24')
  t.equal(await publishAck('198.51.100.50', 'acl-outside'), 0, 'allowed: 198.51.100.50 is not')
  const wire = await Wire.tcp(tcpPort(), v1('203.0.113.51', 5001))
  t.teardown(() => wire.end())
  await wire.connect({ clientId: 'acl-v1', username: 'u' })
  wire.send({ cmd: 'publish', topic: 'data/y', payload: 'p', qos: 1, messageId: 8, retain: false, dup: false } as IPublishPacket)
  t.equal((await wire.next('puback') as IPubackPacket).reasonCode, 0x87, 'a v1 header too')
})

t.test('a banned ip_address refuses the proxied client (0x8A) and no other', async (t) => {
  const until = Math.floor(Date.now() / 1000) + 60
  await api.broker.node.banned.add({ who: '203.0.113.66', as: 'ip_address', reason: 'test', desc: '', by: 'tests', until })
  t.teardown(async () => { await api.broker.node.banned.remove('ip_address', '203.0.113.66') })
  const banned = await Wire.tcp(tcpPort(), v1('203.0.113.66', 1000))
  t.teardown(() => banned.end())
  t.equal((await banned.connect({ clientId: 'ban-1', username: 'u' })).reasonCode, 0x8a, 'the banned address')
  const other = await Wire.tcp(tcpPort(), v1('203.0.113.67', 1000))
  t.teardown(() => other.end())
  t.equal((await other.connect({ clientId: 'ban-2', username: 'u' })).reasonCode, 0, 'its neighbour, over the same load balancer address')
})

t.test('a header split across TCP segments works', async (t) => {
  const header = v1('192.0.2.77', 4321)
  const wire = await Wire.tcp(tcpPort(), [header.subarray(0, 5), header.subarray(5, 20), header.subarray(20)])
  t.teardown(() => wire.end())
  t.equal((await wire.connect({ clientId: 'pp-split-v1', username: 'u' })).reasonCode, 0)
  t.match(await connection('pp-split-v1'), { ipaddress: '192.0.2.77', port: 4321 })
  const binary = v2('192.0.2.78', 4322)
  const wire2 = await Wire.tcp(tcpPort(), [binary.subarray(0, 3), binary.subarray(3, 15), binary.subarray(15)])
  t.teardown(() => wire2.end())
  t.equal((await wire2.connect({ clientId: 'pp-split-v2', username: 'u' })).reasonCode, 0)
  t.match(await connection('pp-split-v2'), { ipaddress: '192.0.2.78', port: 4322 })
})

t.test('without a valid header the connection is closed and no MQTT is read', async (t) => {
  const before = gate('mqtt:tcp').proxyRefused
  const missing = await Wire.tcp(tcpPort())
  t.teardown(() => missing.end())
  missing.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 5, clean: true, keepalive: 60, clientId: 'no-header' } as IConnectPacket)
  t.equal(await missing.waitClosed(), true, 'a plain CONNECT: closed')
  t.same(missing.packets, [], 'no CONNACK')

  const garbage = await Wire.tcp(tcpPort(), Buffer.from('PROXY TCP4 not-an-address 127.0.0.1 1 2\r\n'))
  t.teardown(() => garbage.end())
  garbage.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 5, clean: true, keepalive: 60, clientId: 'bad-header' } as IConnectPacket)
  t.equal(await garbage.waitClosed(), true, 'a bad header: closed')
  t.same(garbage.packets, [], 'no CONNACK')

  const late = await Wire.tcp(tcpPort(), Buffer.from('PROXY TCP4 192.0.2.1'))
  t.teardown(() => late.end())
  t.equal(await late.waitClosed(5000), true, 'a header not finished within proxy_protocol_timeout: closed')
  const silent = await Wire.tcp(tcpPort())
  t.teardown(() => silent.end())
  t.equal(await silent.waitClosed(5000), true, 'nothing at all: closed after the timeout')

  t.equal(gate('mqtt:tcp').proxyRefused - before, 4, 'each is counted')
  t.same(await connection('no-header'), undefined)
  t.same(await connection('bad-header'), undefined)
})

t.test('TLS: the PROXY header comes before the handshake', async (t) => {
  const sslPort = api.broker.port('ssl')
  const wire = await Wire.tls(sslPort, v2('203.0.113.200', 44444))
  t.teardown(() => wire.end())
  t.equal((await wire.connect({ clientId: 'tls-v2', username: 'u' })).reasonCode, 0)
  t.match(await connection('tls-v2'), { ipaddress: '203.0.113.200', port: 44444, peercert: 'undefined' }, 'v2 over TLS')
  wire.send({ cmd: 'publish', topic: 'data/z', payload: 'p', qos: 1, messageId: 9, retain: false, dup: false } as IPublishPacket)
  t.equal((await wire.next('puback') as IPubackPacket).reasonCode, 0x87, 'the ACL rule sees it over TLS too')

  // the header and the ClientHello in one segment: the TLS server must find the ClientHello put back
  const socket = netConnect(sslPort, '127.0.0.1')
  socket.on('error', () => {})
  socket.cork()
  socket.write(v1('2001:db8::7', 555))
  const secure = tlsConnect({ socket, rejectUnauthorized: false })
  process.nextTick(() => socket.uncork())
  await once(secure, 'secureConnect')
  const together = RawClient.over(secure, 5)
  t.teardown(() => together.end())
  t.equal((await together.connect({ clientId: 'tls-v1', username: 'u' })).reasonCode, 0)
  t.match(await connection('tls-v1'), { ipaddress: '2001:db8::7', port: 555 }, 'v1 sent with the ClientHello')

  const before = gate('mqtt:ssl').proxyRefused
  const plain = netConnect(sslPort, '127.0.0.1')
  plain.on('error', () => {})
  const bare = tlsConnect({ socket: plain, rejectUnauthorized: false })
  const outcome = await Promise.race([
    once(bare, 'secureConnect').then(() => 'handshake'),
    new Promise<string>((resolve) => bare.once('error', () => resolve('refused')).once('close', () => resolve('refused')))
  ])
  bare.destroy()
  t.equal(outcome, 'refused', 'a TLS client without the header gets no handshake')
  t.equal(gate('mqtt:ssl').proxyRefused - before, 1, 'and is counted')
})

t.test('WebSocket: X-Forwarded-For (left-most entry) and X-Forwarded-Port when set', async (t) => {
  const url = `ws://127.0.0.1:${api.broker.port('ws')}/mqtt`
  const forwarded = await connect(url, { clientId: 'ws-fwd', username: 'u', wsOptions: { headers: { 'X-Forwarded-For': '203.0.113.9, 10.0.0.1, 10.0.0.2', 'X-Forwarded-Port': '3456' } } })
  t.teardown(() => closeAll(forwarded))
  t.match(await connection('ws-fwd'), { ipaddress: '203.0.113.9', port: 3456 }, 'the original client, not the proxies')
  t.equal(authAddress('ws-fwd'), '203.0.113.9', 'HTTP auth %a')
  const v6 = await connect(url, { clientId: 'ws-fwd6', username: 'u', wsOptions: { headers: { 'X-Forwarded-For': '2001:db8::5' } } })
  t.teardown(() => closeAll(v6))
  t.match(await connection('ws-fwd6'), { ipaddress: '2001:db8::5', port: Number }, 'IPv6, the socket port without a port header')
  const bogus = await connect(url, { clientId: 'ws-bogus', username: 'u', wsOptions: { headers: { 'X-Forwarded-For': 'unknown' } } })
  t.teardown(() => closeAll(bogus))
  t.match(await connection('ws-bogus'), { ipaddress: '127.0.0.1' }, 'not an address: the socket address')
  const none = await connect(url, { clientId: 'ws-none', username: 'u' })
  t.teardown(() => closeAll(none))
  t.match(await connection('ws-none'), { ipaddress: '127.0.0.1' }, 'no header: the socket address')
})

t.test('with the settings off, headers are not trusted', async (t) => {
  const broker = await startBroker({}, ['tcp', 'ws'])
  t.teardown(broker.stop)
  const ws = await connect(`ws://127.0.0.1:${broker.port('ws')}/mqtt`, { clientId: 'ws-off', wsOptions: { headers: { 'X-Forwarded-For': '203.0.113.9' } } })
  t.teardown(() => closeAll(ws))
  t.match(connInfo(engineClient(broker.node.engine, 'ws-off')!.conn), { ipAddress: '127.0.0.1' }, 'X-Forwarded-For is ignored')
  const wire = await Wire.tcp(broker.port('tcp'), v1('203.0.113.7', 1))
  t.teardown(() => wire.end())
  wire.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 5, clean: true, keepalive: 60, clientId: 'pp-off' } as IConnectPacket)
  // read as MQTT, `PROXY TC` is the start of a PUBREC 82 bytes long: the CONNECT after it is never seen
  await t.rejects(wire.next('connack', 1000), 'a PROXY header on a plain listener is not understood: no CONNACK')
  t.equal(engineClient(broker.node.engine, 'pp-off'), undefined, 'and no client')
})
