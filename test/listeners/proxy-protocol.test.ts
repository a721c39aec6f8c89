// The PROXY protocol parser (v1 text, v2 binary) and the header reader over a socket.
import { once } from 'node:events'
import { createServer, connect as netConnect, type Socket } from 'node:net'
import t from 'tap'
import { formatIPv6, parseProxyHeader, readProxyHeader, V2_MAX_BODY, type ParseResult, type ProxyHeader } from '../../lib/listeners/proxy-protocol.js'

const SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a])

/** A v2 header: version/command byte, family/transport byte, then the body. */
function v2 (verCmd: number, famTransport: number, body: Buffer): Buffer {
  const head = Buffer.alloc(4)
  head[0] = verCmd
  head[1] = famTransport
  head.writeUInt16BE(body.length, 2)
  return Buffer.concat([SIGNATURE, head, body])
}

function inet4 (src: number[], dst: number[], sport: number, dport: number, tlvs = Buffer.alloc(0)): Buffer {
  const b = Buffer.alloc(12)
  Buffer.from(src).copy(b, 0)
  Buffer.from(dst).copy(b, 4)
  b.writeUInt16BE(sport, 8)
  b.writeUInt16BE(dport, 10)
  return Buffer.concat([b, tlvs])
}

function inet6 (src: Buffer, dst: Buffer, sport: number, dport: number): Buffer {
  const b = Buffer.alloc(36)
  src.copy(b, 0)
  dst.copy(b, 16)
  b.writeUInt16BE(sport, 32)
  b.writeUInt16BE(dport, 34)
  return b
}

function ip6 (text: string): Buffer {
  // test-only expander for full or `::`-compressed hex addresses
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined]
  const h = head === '' ? [] : head.split(':')
  const tl = tail === undefined || tail === '' ? [] : tail.split(':')
  const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - tl.length).fill('0'), ...tl]
  const b = Buffer.alloc(16)
  groups.forEach((g, i) => b.writeUInt16BE(parseInt(g, 16), i * 2))
  return b
}

const done = (header: ProxyHeader): ParseResult => ({ state: 'done', header })

t.test('v1: TCP4, TCP6 and UNKNOWN', async (t) => {
  const line = 'PROXY TCP4 203.0.113.7 192.0.2.1 51234 1883\r\n'
  t.same(parseProxyHeader(Buffer.from(line)), done({ version: 1, peer: { address: '203.0.113.7', port: 51234 }, length: line.length }))
  const six = 'PROXY TCP6 2001:db8::42 2001:db8::1 65535 8883\r\n'
  t.same(parseProxyHeader(Buffer.from(six)), done({ version: 1, peer: { address: '2001:db8::42', port: 65535 }, length: six.length }))
  const mapped = 'PROXY TCP6 ::ffff:198.51.100.9 ::1 1 2\r\n'
  t.equal((parseProxyHeader(Buffer.from(mapped)) as { header: ProxyHeader }).header.peer?.address, '198.51.100.9', 'IPv4-mapped reads as IPv4')
  t.same(parseProxyHeader(Buffer.from('PROXY UNKNOWN\r\n')), done({ version: 1, length: 15 }), 'UNKNOWN keeps the socket address')
  const unknown = 'PROXY UNKNOWN ffff:f...f:ffff ffff:f...f:ffff 65535 65535\r\n'
  t.same(parseProxyHeader(Buffer.from(unknown)), done({ version: 1, length: unknown.length }), 'UNKNOWN ignores the rest of the line')
  const withMqtt = Buffer.concat([Buffer.from(line), Buffer.from([0x10, 0x0c])])
  t.equal((parseProxyHeader(withMqtt) as { header: ProxyHeader }).header.length, line.length, 'the bytes after the header are not part of it')
})

t.test('v1: every prefix of a valid header is incomplete', async (t) => {
  const line = Buffer.from('PROXY TCP4 203.0.113.7 192.0.2.1 51234 1883\r\n')
  for (let n = 0; n < line.length; n++) t.same(parseProxyHeader(line.subarray(0, n)), { state: 'incomplete' }, `${n} bytes`)
})

t.test('v1: garbage and malformed headers are invalid', async (t) => {
  const bad: Array<[string | Buffer, RegExp]> = [
    [Buffer.from([0x10, 0x2a, 0x00, 0x04]), /no PROXY protocol header/],
    ['GET / HTTP/1.1\r\n', /no PROXY protocol header/],
    ['PROXX TCP4', /not a PROXY v1 header/],
    ['PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n', /non-printable/],
    ['PROXY TCP4 1.2.3.4 5.6.7.8 1 2\rX', /not ended by CRLF/],
    ['PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n', /6 fields/],
    ['PROXY TCP4  1.2.3.4 5.6.7.8 1 2\r\n', /6 fields/],
    ['PROXY UDP4 1.2.3.4 5.6.7.8 1 2\r\n', /"UDP4" is not TCP4/],
    ['PROXY TCP4 2001:db8::1 5.6.7.8 1 2\r\n', /not TCP4 addresses/],
    ['PROXY TCP6 1.2.3.4 ::1 1 2\r\n', /not TCP6 addresses/],
    ['PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n', /ports/],
    ['PROXY TCP4 1.2.3.4 5.6.7.8 01 2\r\n', /ports/],
    ['PROXY TCP4 1.2.3.4 5.6.7.8 1 x\r\n', /ports/],
    ['PROXY TCP4 999.2.3.4 5.6.7.8 1 2\r\n', /not TCP4 addresses/],
    ['PROXY ' + 'A'.repeat(101), /longer than 107/],
    ['PROXY ' + 'A'.repeat(100) + '\r', /longer than 107/]
  ]
  for (const [input, reason] of bad) {
    const result = parseProxyHeader(typeof input === 'string' ? Buffer.from(input, 'latin1') : input)
    t.equal(result.state, 'invalid', JSON.stringify(input.toString()))
    if (result.state === 'invalid') t.match(result.reason, reason)
  }
  const longest = 'PROXY TCP6 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n'
  t.equal(longest.length, 104)
  t.equal(parseProxyHeader(Buffer.from(longest)).state, 'done', 'the longest real header fits')
  const at107 = 'PROXY UNKNOWN ' + 'x'.repeat(91) + '\r\n'
  t.equal(at107.length, 107)
  t.equal(parseProxyHeader(Buffer.from(at107)).state, 'done', '107 bytes with CRLF is the limit')
})

t.test('v2: PROXY over IPv4 and IPv6, TLVs skipped', async (t) => {
  const four = v2(0x21, 0x11, inet4([203, 0, 113, 7], [192, 0, 2, 1], 40001, 1883))
  t.same(parseProxyHeader(four), done({ version: 2, peer: { address: '203.0.113.7', port: 40001 }, length: 28 }))
  const tlvs = Buffer.from([0x01, 0x00, 0x02, 0x68, 0x32, 0x04, 0x00, 0x00]) // ALPN "h2", NOOP
  const withTlvs = v2(0x21, 0x11, inet4([10, 1, 2, 3], [10, 0, 0, 1], 1, 2, tlvs))
  t.same(parseProxyHeader(Buffer.concat([withTlvs, Buffer.from([0x10])])), done({ version: 2, peer: { address: '10.1.2.3', port: 1 }, length: 36 }))
  const six = v2(0x21, 0x21, inet6(ip6('2001:db8::42'), ip6('2001:db8::1'), 50000, 8883))
  t.same(parseProxyHeader(six), done({ version: 2, peer: { address: '2001:db8::42', port: 50000 }, length: 52 }))
  const mapped = v2(0x21, 0x21, inet6(ip6('::ffff:c633:6409'), ip6('::1'), 7, 8))
  t.equal((parseProxyHeader(mapped) as { header: ProxyHeader }).header.peer?.address, '198.51.100.9')
})

t.test('v2: LOCAL, UNSPEC and UNIX keep the socket address', async (t) => {
  t.same(parseProxyHeader(v2(0x20, 0x00, Buffer.alloc(0))), done({ version: 2, length: 16 }), 'LOCAL health check')
  t.same(parseProxyHeader(v2(0x20, 0x11, inet4([1, 2, 3, 4], [5, 6, 7, 8], 1, 2))), done({ version: 2, length: 28 }), 'LOCAL ignores addresses')
  t.same(parseProxyHeader(v2(0x21, 0x00, Buffer.alloc(0))), done({ version: 2, length: 16 }), 'PROXY with UNSPEC')
  t.same(parseProxyHeader(v2(0x21, 0x31, Buffer.alloc(216))), done({ version: 2, length: 232 }), 'PROXY from a UNIX socket')
})

t.test('v2: every prefix is incomplete, bad headers are invalid', async (t) => {
  const four = v2(0x21, 0x11, inet4([203, 0, 113, 7], [192, 0, 2, 1], 40001, 1883))
  for (let n = 0; n < four.length; n++) t.same(parseProxyHeader(four.subarray(0, n)), { state: 'incomplete' }, `${n} bytes`)
  const bad: Array<[Buffer, RegExp]> = [
    [Buffer.concat([SIGNATURE.subarray(0, 5), Buffer.from('X')]), /not a PROXY v2 header/],
    [v2(0x11, 0x11, inet4([1, 2, 3, 4], [5, 6, 7, 8], 1, 2)), /version 1/],
    [v2(0x22, 0x11, inet4([1, 2, 3, 4], [5, 6, 7, 8], 1, 2)), /command 2/],
    [v2(0x21, 0x12, inet4([1, 2, 3, 4], [5, 6, 7, 8], 1, 2)), /not STREAM/],
    [v2(0x21, 0x41, inet4([1, 2, 3, 4], [5, 6, 7, 8], 1, 2)), /not defined/],
    [v2(0x21, 0x13, inet4([1, 2, 3, 4], [5, 6, 7, 8], 1, 2)), /not defined/],
    [v2(0x21, 0x11, Buffer.alloc(8)), /IPv4 address block is short/],
    [v2(0x21, 0x21, Buffer.alloc(12)), /IPv6 address block is short/]
  ]
  for (const [input, reason] of bad) {
    const result = parseProxyHeader(input)
    t.equal(result.state, 'invalid', reason.source)
    if (result.state === 'invalid') t.match(result.reason, reason)
  }
  const huge = Buffer.concat([SIGNATURE, Buffer.from([0x21, 0x11, 0xff, 0xff])])
  t.match(parseProxyHeader(huge), { state: 'invalid', reason: /over 2048/ }, 'the length is bounded before the body arrives')
  const atLimit = v2(0x21, 0x11, inet4([1, 2, 3, 4], [5, 6, 7, 8], 1, 2, Buffer.alloc(V2_MAX_BODY - 12)))
  t.equal(parseProxyHeader(atLimit).state, 'done', `${V2_MAX_BODY} body bytes are accepted`)
})

t.test('formatIPv6 compresses the longest run of zero groups (RFC 5952)', async (t) => {
  t.equal(formatIPv6(ip6('2001:db8:0:0:1:0:0:1')), '2001:db8::1:0:0:1', 'the first of equal runs')
  t.equal(formatIPv6(ip6('2001:db8:0:1:1:1:1:1')), '2001:db8:0:1:1:1:1:1', 'a single zero group stays')
  t.equal(formatIPv6(ip6('0:0:0:0:0:0:0:0')), '::')
  t.equal(formatIPv6(ip6('0:0:0:0:0:0:0:1')), '::1')
  t.equal(formatIPv6(ip6('fe80:0:0:0:0:0:0:0')), 'fe80::')
  t.equal(formatIPv6(ip6('2001:db8:0:0:0:1:0:0')), '2001:db8::1:0:0')
  t.equal(formatIPv6(ip6('2001:DB8:AAAA:BBBB:CCCC:DDDD:EEEE:FFFF')), '2001:db8:aaaa:bbbb:cccc:dddd:eeee:ffff')
})

/** A connected socket pair over loopback: the server side is returned with the client side. */
async function socketPair (t: { teardown: (fn: () => unknown) => void }): Promise<{ server: Socket, client: Socket }> {
  const listener = createServer()
  listener.listen(0, '127.0.0.1')
  await once(listener, 'listening')
  const accepted = once(listener, 'connection')
  const client = netConnect((listener.address() as { port: number }).port, '127.0.0.1')
  client.on('error', () => {})
  const [server] = await accepted as [Socket]
  server.on('error', () => {})
  t.teardown(() => {
    client.destroy()
    server.destroy()
    listener.close()
  })
  return { server, client }
}

async function read (socket: Socket, timeoutMs: number): Promise<{ err: Error | null, header?: ProxyHeader }> {
  return await new Promise((resolve) => readProxyHeader(socket, timeoutMs, (err, header) => resolve({ err, header })))
}

async function collect (socket: Socket, bytes: number): Promise<Buffer> {
  const chunks: Buffer[] = []
  let got = 0
  for await (const chunk of socket) {
    chunks.push(chunk as Buffer)
    got += (chunk as Buffer).length
    if (got >= bytes) break
  }
  return Buffer.concat(chunks)
}

t.test('reader: a header sent a byte at a time, then the payload is there for the next reader', async (t) => {
  const { server, client } = await socketPair(t)
  client.setNoDelay(true)
  const header = Buffer.from('PROXY TCP4 203.0.113.7 192.0.2.1 51234 1883\r\n')
  const reading = read(server, 5000)
  for (const byte of header) {
    client.write(Buffer.from([byte]))
    await new Promise((resolve) => setTimeout(resolve, 2))
  }
  client.write('after')
  const { err, header: got } = await reading
  t.equal(err, null)
  t.same(got?.peer, { address: '203.0.113.7', port: 51234 })
  t.equal((await collect(server, 5)).toString(), 'after', 'the bytes after the header are read by the next reader')
})

t.test('reader: header and payload in one write', async (t) => {
  const { server, client } = await socketPair(t)
  client.write(Buffer.concat([v2(0x21, 0x11, inet4([198, 51, 100, 1], [1, 1, 1, 1], 9, 9)), Buffer.from('MQTT bytes')]))
  const { err, header } = await read(server, 5000)
  t.equal(err, null)
  t.same(header?.peer, { address: '198.51.100.1', port: 9 })
  t.equal((await collect(server, 10)).toString(), 'MQTT bytes')
})

t.test('reader: garbage, an early end and silence are errors', async (t) => {
  const garbage = await socketPair(t)
  garbage.client.write(Buffer.from([0x10, 0x10, 0x00, 0x04, 0x4d, 0x51, 0x54, 0x54]))
  t.match((await read(garbage.server, 5000)).err?.message, /no PROXY protocol header/)

  const ended = await socketPair(t)
  ended.client.end('PROXY TCP4 1.2.3.4')
  t.match((await read(ended.server, 5000)).err?.message, /closed before a complete PROXY protocol header/)

  const silent = await socketPair(t)
  silent.client.write('PROXY TCP4 1.2.3.4 ')
  t.match((await read(silent.server, 100)).err?.message, /no PROXY protocol header within 100 ms/)
})
