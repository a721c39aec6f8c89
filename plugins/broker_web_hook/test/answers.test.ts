// The delivery thread's own HTTP/1.1 client against an endpoint that writes
// exactly the bytes a test chooses: every way an answer may be framed
// (content-length, chunked with extensions and trailers, no body, an interim
// 100, close-delimited, split into single bytes), a connection the endpoint
// closes (`connection: close`, HTTP/1.0), and answers that are not HTTP: each
// ends the connection, the events on it are retried or given up, the alarm
// says why, and the thread goes on posting.
import { createServer, type Socket } from 'node:net'
import t, { type Test } from 'tap'
import { waitFor } from '../../../test/helpers/cluster.js'
import type { DeliveryOptions, Pending } from '../delivery.js'
import { delivery as makeDelivery } from './endpoint.js'

const ALARM = 'broker_web_hook_unavailable'

/** In a script: the endpoint ends its side of the connection here. */
const END = Symbol('end')
/** What the endpoint writes for the request with this body (numbered from 1): the bytes in order, each string one write. */
type Script = (body: { key: string, n: number }, request: number) => Array<string | typeof END>

interface RawEndpoint {
  url: string
  /** the bodies of the requests read, in order */
  bodies: Array<{ key: string, n: number }>
  connections: number
  /** connections the client ended */
  closed: number
  script: Script
}

async function rawEndpoint (t: Test, script: Script): Promise<RawEndpoint> {
  const sockets = new Set<Socket>()
  const endpoint: RawEndpoint = { url: '', bodies: [], connections: 0, closed: 0, script }
  const server = createServer((socket) => {
    endpoint.connections++
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('end', () => endpoint.closed++)
    socket.on('error', () => {})
    let pending = Buffer.alloc(0)
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk])
      for (;;) {
        const end = pending.indexOf('\r\n\r\n')
        if (end < 0) return
        const head = pending.toString('latin1', 0, end)
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0)
        if (pending.length < end + 4 + length) return
        const body = JSON.parse(pending.toString('utf8', end + 4, end + 4 + length)) as { key: string, n: number }
        pending = pending.subarray(end + 4 + length)
        endpoint.bodies.push(body)
        for (const bytes of endpoint.script(body, endpoint.bodies.length)) {
          if (bytes === END) {
            socket.end()
            return
          }
          socket.write(bytes, 'latin1')
        }
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('no port')
  endpoint.url = `http://127.0.0.1:${address.port}/hook`
  t.teardown(async () => {
    for (const socket of sockets) socket.destroy()
    await new Promise((resolve) => server.close(resolve))
  })
  return endpoint
}

/** One connection, one retry, no back-off: each test counts the tries. */
const delivery = (t: Test, url: string, options: Partial<DeliveryOptions> = {}): ReturnType<typeof makeDelivery> =>
  makeDelivery(t, url, { poolSize: 1, retryTimes: 1, retryBackoff: 1, ...options })

const event = (key: string, n: number): Pending => ({ key, size: 100, body: () => JSON.stringify({ key, n }) })

/** Every framing an HTTP/1.1 answer may have, in turn. */
const FRAMINGS = [
  'HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok',
  'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\nwiki\r\n5\r\npedia\r\n0\r\n\r\n',
  'HTTP/1.1 201 Created\r\ntransfer-encoding: gzip, chunked\r\nx-other: y\r\n\r\n2\r\nok\r\n0\r\nx-trailer: 1\r\n\r\n',
  'HTTP/1.1 204 No Content\r\n\r\n',
  'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n',
  'HTTP/1.1 200 OK\r\nCONTENT-LENGTH: 3\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\nabc',
  'HTTP/1.0 200 OK\r\nconnection: keep-alive\r\ncontent-length: 0\r\n\r\n'
]

for (const thread of ['inline', 'worker'] as const) {
  t.test(`answers framed every HTTP/1.1 way, pipelined on one keep-alive connection (${thread})`, async (t) => {
    const e = await rawEndpoint(t, (_body, request) => [FRAMINGS[(request - 1) % FRAMINGS.length]])
    const { delivery: d, counts } = delivery(t, e.url, { thread })
    for (let n = 0; n < 28; n++) d.offer(event('a', n))
    await waitFor(() => counts.sent === 28, 20_000, 'all 28 events accepted')
    t.equal(counts.failed, 0, 'none failed')
    t.same(e.bodies.map((body) => body.n), Array.from({ length: 28 }, (_, n) => n), 'each posted once, in order')
    t.equal(e.connections, 1, 'all on one connection')
  })
}

t.test('an answer split into single bytes, written one by one', async (t) => {
  const answer = 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n'
  const e = await rawEndpoint(t, () => [...answer])
  const { delivery: d, counts } = delivery(t, e.url)
  for (let n = 0; n < 3; n++) d.offer(event('a', n))
  await waitFor(() => counts.sent === 3, 20_000, 'all 3 accepted')
  t.equal(e.connections, 1)
})

t.test('connection: close, HTTP/1.0 and a close-delimited body: the connection ends after the answer, the next events go on a new one', async (t) => {
  const answers: Array<Array<string | typeof END>> = [
    ['HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 0\r\n\r\n'],
    ['HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\nok'],
    ['HTTP/1.1 200 OK\r\n\r\nthe body ends with the connection', END]
  ]
  const e = await rawEndpoint(t, (_body, request) => answers[(request - 1) % answers.length])
  const { delivery: d, counts, ctx } = delivery(t, e.url, { pipelining: 1 })
  for (let n = 0; n < 6; n++) d.offer(event('a', n))
  await waitFor(() => counts.sent === 6, 20_000, 'all 6 accepted')
  t.equal(counts.failed, 0)
  t.same(e.bodies.map((body) => body.n), [0, 1, 2, 3, 4, 5], 'each posted once, in order')
  t.equal(e.connections, 6, 'a connection per answer')
  t.notOk(ctx.raised.has(ALARM), 'an endpoint that closes its connections is not down')
})

const OK = 'HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n'
/** Endpoints that end a pipelined connection after an answer: its script, and how many connections 10 events take. */
const CLOSING: Array<[string, Script, number, string]> = [
  ['a close-delimited answer on a pipelined connection',
    (_body, request) => request === 2 ? ['HTTP/1.1 200 OK\r\n\r\nthe body ends with the connection', END] : [OK],
    2, 'a second connection after the close'],
  ['an endpoint that closes the connection after every answer but the first, pipelined to',
    (_body, request) => request === 1 ? [OK] : ['HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 0\r\n\r\n', END],
    9, 'the first connection answered two (0, 1), then one each']
]

for (const [name, script, connections, why] of CLOSING) {
  t.test(`${name}: the requests it did not read go again, not counted as failures`, async (t) => {
    const e = await rawEndpoint(t, script)
    const { delivery: d, counts, ctx } = delivery(t, e.url, { pipelining: 8, retryTimes: 0 })
    // the first is accepted alone, with the connection kept; then 9 go at once on it
    d.offer(event('a', 0))
    await waitFor(() => counts.sent === 1, 20_000, 'the first accepted')
    for (let n = 1; n < 10; n++) d.offer(event('a', n))
    await waitFor(() => counts.sent === 10, 20_000, 'all 10 accepted')
    t.equal(counts.failed, 0, 'none given up (no retries allowed)')
    t.same(e.bodies.map((body) => body.n), Array.from({ length: 10 }, (_, n) => n), 'each read once, in order')
    t.equal(e.connections, connections, why)
    t.notOk(ctx.raised.has(ALARM), 'no alarm')
  })
}

const BROKEN: Array<[string, string, RegExp]> = [
  ['not HTTP', 'SSH-2.0-OpenSSH_9.2\r\n\r\n', /not an HTTP\/1\.1 answer: status line "SSH-2\.0-OpenSSH_9\.2"/],
  ['two content-lengths that differ', 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\nok', /content-length "3"/],
  ['a content-length that is not a number', 'HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n', /content-length "-1"/],
  ['a bad chunk size', 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n', /bad chunk size "zz"/],
  ['no CRLF after a chunk', 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nokXX\r\n', /no CRLF after a chunk/],
  ['101 to a POST', 'HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\n\r\n', /101 to a POST/],
  ['a head that never ends', `HTTP/1.1 200 OK\r\nx-long: ${'a'.repeat(70 * 1024)}`, /a head or line too long/]
]

for (const [name, bytes, why] of BROKEN) {
  t.test(`an answer with ${name}: the connection ends, the event is retried then given up, the alarm says why, and the thread goes on`, async (t) => {
    let broken = true
    const e = await rawEndpoint(t, () => [broken ? bytes : 'HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n'])
    const { delivery: d, counts, ctx } = delivery(t, e.url)
    d.offer(event('a', 1))
    await waitFor(() => counts.failed === 1, 20_000, 'given up after its retry')
    t.equal(e.bodies.length, 2, 'tried twice')
    t.equal(e.connections, 2, 'each try on a new connection')
    t.match(ctx.raised.get(ALARM)?.summary, why, 'the alarm says why')
    broken = false
    d.offer(event('a', 2))
    await waitFor(() => counts.sent === 1, 20_000, 'the next event accepted')
    t.notOk(ctx.raised.has(ALARM), 'the alarm cleared')
  })
}

t.test('an answer to no request ends the connection; the next event goes on a new one', async (t) => {
  const ok = 'HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n'
  const e = await rawEndpoint(t, (_body, request) => request === 1 ? [ok + ok] : [ok])
  const { delivery: d, counts } = delivery(t, e.url)
  d.offer(event('a', 1))
  await waitFor(() => e.closed === 1, 20_000, 'the client ended the connection that answered twice')
  t.equal(counts.sent, 1, 'the first answer was the request\'s')
  d.offer(event('a', 2))
  await waitFor(() => counts.sent === 2, 20_000, 'the next event accepted')
  t.equal(e.connections, 2, 'on a new connection')
  t.equal(counts.failed, 0)
})

t.test('an endpoint that closes mid-answer: the event is retried and accepted', async (t) => {
  const e = await rawEndpoint(t, (_body, request) => request === 1 ? ['HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc', END] : ['HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n'])
  const { delivery: d, counts } = delivery(t, e.url)
  d.offer(event('a', 1))
  await waitFor(() => counts.sent === 1, 20_000, 'accepted on the second try')
  t.same(e.bodies.map((body) => body.n), [1, 1], 'posted twice')
  t.equal(counts.failed, 0)
})

t.test('pipelined answers read together: a run of equal ones compared at once, and one that differs inside it, each its own request\'s', async (t) => {
  const failing = 'HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n'
  const other = 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok'
  // request 1 alone (the connection then pipelines); requests 2-101 answered in one write, 50 with a 500, 80 with another 200
  const together = Array.from({ length: 100 }, (_, i) => i + 2 === 50 ? failing : i + 2 === 80 ? other : OK).join('')
  const e = await rawEndpoint(t, (_body, request) => request === 1 || request > 101 ? [OK] : request === 101 ? [together] : [])
  const { delivery: d, counts } = delivery(t, e.url, { pipelining: 256, queueSize: 1000 })
  d.offer(event('a', 0))
  await waitFor(() => counts.sent === 1, 20_000, 'the first accepted')
  for (let n = 1; n <= 100; n++) d.offer(event('a', n))
  await waitFor(() => counts.sent === 101, 20_000, 'all 101 accepted')
  t.equal(counts.failed, 0, 'none given up')
  t.same(e.bodies.map((body) => body.n), [...Array.from({ length: 101 }, (_, n) => n), 49], 'the one answered 500 (request 50, event 49) posted again, the others once')
  t.equal(e.connections, 1)
})

t.test('two clients on two connections, their events interleaved: each connection writes its own requests whole and in order', async (t) => {
  const e = await rawEndpoint(t, () => [OK])
  const { delivery: d, counts } = delivery(t, e.url, { poolSize: 2, pipelining: 4 })
  d.offer(event('a', 0))
  await waitFor(() => counts.sent === 1, 20_000, 'the first accepted')
  // four of a fill the first connection's room; b's events then go to the second; a and b alternate from there
  const keys = ['a', 'a', 'a', 'a', ...Array.from({ length: 36 }, (_, i) => i % 2 === 0 ? 'b' : 'a')]
  keys.forEach((key, i) => d.offer(event(key, i + 1)))
  await waitFor(() => counts.sent === 41, 20_000, 'all 41 accepted')
  t.equal(counts.failed, 0)
  const of = (key: string): number[] => e.bodies.filter((body) => body.key === key).map((body) => body.n)
  t.same(of('a'), [0, ...keys.flatMap((key, i) => key === 'a' ? [i + 1] : [])], "a's events once each, in order")
  t.same(of('b'), keys.flatMap((key, i) => key === 'b' ? [i + 1] : []), "b's events once each, in order")
  t.equal(e.connections, 2, 'one connection each')
})
