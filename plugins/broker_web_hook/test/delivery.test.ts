// The delivery of queued events against a real HTTP(S) endpoint, without a
// node: keep-alive connections bounded by pool_size, one client's events in
// order (pipelined: several under way, a retried one bounded), retries of 5xx and of no answer (then given up), no retry of 4xx,
// the bounded queue (drops counted), the alarm while the endpoint is down,
// TLS with a CA and a client certificate, and close.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { freePort, INSTALL_ROOT } from '../../../lib/plugin-kit/testing.js'
import { waitFor } from '../../../test/helpers/cluster.js'
import type { Pending } from '../delivery.js'
import { delivery, startEndpoint, type Endpoint } from './endpoint.js'

const ALARM = 'broker_web_hook_unavailable'

const event = (key: string, n: number, size = 300): Pending => ({ key, size, body: () => JSON.stringify({ key, n }) })

async function endpoint (t: Test, options?: Parameters<typeof startEndpoint>[0]): Promise<Endpoint> {
  const e = await startEndpoint(options)
  t.teardown(e.close)
  return e
}

t.test('the same on this thread (the delivery thread\'s code, run here)', async (t) => {
  const e = await endpoint(t)
  const { delivery: d, counts } = delivery(t, e.url())
  for (let n = 0; n < 20; n++) for (const key of ['a', 'b', 'c']) d.offer(event(key, n))
  await waitFor(() => counts.sent === 60, 20_000, 'all 60 events posted')
  for (const key of ['a', 'b', 'c']) t.same(e.hits.filter((h) => h.body.key === key).map((h) => h.body.n), Array.from({ length: 20 }, (_, n) => n), `client ${key}'s events in order`)
  t.ok(e.connections <= 4, `at most pool_size connections (${e.connections})`)
})

t.test('posts JSON over keep-alive connections, at most pool_size of them, each client in order (on a worker thread)', async (t) => {
  const e = await endpoint(t)
  const { delivery: d, counts } = delivery(t, e.url('/hook?tag=1'), { thread: 'worker', queueSize: 300, headers: { 'X-Token': 'secret', 'content-type': 'application/json; charset=utf-8' } })
  for (let n = 0; n < 50; n++) for (const key of ['a', 'b', 'c', 'd', 'e', 'f']) d.offer(event(key, n))
  await waitFor(() => counts.sent === 300, 20_000, 'all 300 events posted')
  t.equal(e.hits.length, 300)
  t.equal(counts.failed + counts.dropped, 0)
  const first = e.hits[0]
  t.equal(first.method, 'POST')
  t.equal(first.path, '/hook?tag=1', 'the path and query of the URL')
  t.equal(first.headers['x-token'], 'secret', 'a configured header')
  t.equal(first.headers['content-type'], 'application/json; charset=utf-8', 'a configured content-type replaces the default')
  for (const key of ['a', 'b', 'c', 'd', 'e', 'f']) {
    t.same(e.hits.filter((h) => h.body.key === key).map((h) => h.body.n), Array.from({ length: 50 }, (_, n) => n), `client ${key}'s events in order`)
  }
  t.ok(e.connections <= 4, `at most pool_size connections (${e.connections})`)
  t.equal(d.queued, 0)
})

t.test('connections open as the events need them: clients share the first connection with room, one client\'s events stay on one', async (t) => {
  const e = await endpoint(t)
  const { delivery: d, counts } = delivery(t, e.url(), { poolSize: 4, pipelining: 8 })
  for (let n = 0; n < 2; n++) for (const key of ['a', 'b', 'c']) d.offer(event(key, n))
  await waitFor(() => counts.sent === 6, 10_000, 'six events of three clients posted')
  t.equal(e.connections, 1, 'three clients, six events (fewer than pipelining): one connection')
  // one turn: a fills the first connection's room (8 events), b then takes the next one
  for (let n = 2; n < 10; n++) d.offer(event('a', n))
  for (let n = 2; n < 4; n++) d.offer(event('b', n))
  await waitFor(() => counts.sent === 16, 10_000, 'all 16 posted')
  t.equal(e.connections, 2, 'a second connection once the first had no room')
  for (const [key, last] of [['a', 10], ['b', 4]] as const) t.same(e.hits.filter((h) => h.body.key === key).map((h) => h.body.n), Array.from({ length: last }, (_, n) => n), `client ${key}'s events in order`)
})

t.test('pipelining: once the endpoint accepts one, several of a client\'s events under way on its connection, in order', async (t) => {
  const e = await endpoint(t)
  const { delivery: d, counts } = delivery(t, e.url(), { poolSize: 1, pipelining: 4 })
  d.offer(event('a', 0))
  await waitFor(() => counts.sent === 1, 10_000, 'the first posted')
  e.answer(() => 'hang')
  for (let n = 1; n <= 6; n++) d.offer(event('a', n))
  await waitFor(() => e.hits.length === 5, 10_000, 'four requests under way, none answered')
  t.same(e.hits.map((h) => h.body.n), [0, 1, 2, 3, 4], 'at most web.hook.request.pipelining under way, in order')
  e.answer(() => 200)
  e.release()
  await waitFor(() => counts.sent === 7, 10_000, 'all 7 posted')
  t.same(e.hits.map((h) => h.body.n), [0, 1, 2, 3, 4, 5, 6], 'each posted once, in order')
  t.equal(e.connections, 1, 'over one connection')
})

t.test('pipelining: a failed event is retried before the client\'s events that were not under way yet', async (t) => {
  const e = await endpoint(t)
  const { delivery: d, counts } = delivery(t, e.url(), { poolSize: 1, pipelining: 4 })
  d.offer(event('a', 0))
  await waitFor(() => counts.sent === 1, 10_000, 'the first posted')
  let failed = false
  e.answer((hit) => {
    if (hit.body.n !== 1 || failed) return 200
    failed = true
    return 500
  })
  for (let n = 1; n <= 12; n++) d.offer(event('a', n))
  await waitFor(() => counts.sent === 13, 10_000, 'all 13 posted')
  const seq = e.hits.map((h) => h.body.n as number)
  const first = seq.indexOf(1)
  const again = seq.indexOf(1, first + 1)
  t.ok(again > first, `event 1 posted twice (${seq.join(' ')})`)
  const between = seq.slice(first + 1, again)
  t.ok(between.length <= 3, `only the events already under way came between (${between.join(' ')})`)
  const next = between.length === 0 ? 2 : Math.max(...between) + 1
  t.same(seq.slice(again), [1, ...Array.from({ length: 13 - next }, (_, i) => next + i)], 'then the rest in order')
  t.equal(counts.failed, 0)
})

t.test('batch_size: a POST carries the events waiting on a lane, as a JSON array, each client in order; a failed batch is retried whole', async (t) => {
  const e = await endpoint(t)
  const { delivery: d, counts } = delivery(t, e.url(), { poolSize: 1, pipelining: 1, batchSize: 5 })
  let failed = false
  e.answer(() => {
    if (failed) return 200
    failed = true
    return 500
  })
  for (let n = 0; n < 12; n++) for (const key of ['a', 'b']) d.offer(event(key, n))
  await waitFor(() => counts.sent === 24, 10_000, 'all 24 posted')
  const batches = e.hits.map((h) => h.body as unknown as Array<{ key: string, n: number }>)
  t.ok(batches.every((b) => Array.isArray(b) && b.length >= 1 && b.length <= 5), `arrays of 1 to 5 events (${batches.map((b) => b.length).join(' ')})`)
  t.same(batches[1], batches[0], 'the batch answered 500 posted again, the same events')
  const events = batches.slice(1).flat()
  t.equal(events.length, 24, 'then each event once')
  for (const key of ['a', 'b']) t.same(events.filter((ev) => ev.key === key).map((ev) => ev.n), Array.from({ length: 12 }, (_, n) => n), `client ${key}'s events in order`)
  t.equal(counts.failed + counts.dropped, 0)
  t.equal(d.queued, 0, 'every event off the queue')
  t.equal(d.queuedBytes, 0)
})

t.test('the default content-type is application/json', async (t) => {
  const e = await endpoint(t)
  const { delivery: d, counts } = delivery(t, e.url())
  d.offer(event('a', 1))
  await waitFor(() => counts.sent === 1, 10_000, 'posted')
  t.equal(e.hits[0].headers['content-type'], 'application/json')
  t.same(e.hits[0].body, { key: 'a', n: 1 })
})

t.test('a 500 is retried retry_times times, then the event is given up', async (t) => {
  const e = await endpoint(t)
  e.answer(() => 500)
  const { delivery: d, counts, ctx } = delivery(t, e.url())
  d.offer(event('a', 1))
  await waitFor(() => counts.failed === 1, 10_000, 'given up')
  t.equal(e.hits.length, 3, 'the first attempt and two retries')
  t.equal(counts.sent, 0)
  t.notOk(ctx.raised.has(ALARM), 'the endpoint answers: no alarm')
  e.answer((hit) => hit.body.n === 2 && e.hits.filter((h) => h.body.n === 2).length < 2 ? 503 : 200)
  d.offer(event('a', 2))
  await waitFor(() => counts.sent === 1, 10_000, 'delivered on the retry')
  t.equal(e.hits.filter((h) => h.body.n === 2).length, 2, 'a 503 then a 200')
})

t.test('a 4xx is not retried', async (t) => {
  const e = await endpoint(t)
  e.answer(() => 404)
  const { delivery: d, counts } = delivery(t, e.url())
  d.offer(event('a', 1))
  await waitFor(() => counts.failed === 1, 10_000, 'given up')
  t.equal(e.hits.length, 1)
})

t.test('an endpoint that is down: retried then given up, drops counted when the queue is full, the alarm raised then cleared', async (t) => {
  const port = await freePort()
  const { delivery: d, counts, ctx } = delivery(t, `http://127.0.0.1:${port}/hook`, { poolSize: 1, queueSize: 5, retryTimes: 1, retryInterval: 200 })
  for (let n = 0; n < 20; n++) d.offer(event('a', n))
  t.equal(counts.dropped, 15, '5 wait (taken on the next turn of the event loop); the rest are dropped')
  await waitFor(() => ctx.raised.has(ALARM), 10_000, 'the alarm')
  t.match(ctx.raised.get(ALARM), { severity: 'warning', title: /broker_web_hook: http:\/\/127\.0\.0\.1:\d+ unavailable/ })
  await waitFor(() => counts.failed >= 1, 10_000, 'the first event given up')
  const e = await endpoint(t, { port })
  await waitFor(() => !ctx.raised.has(ALARM), 20_000, 'the alarm cleared once the endpoint answers')
  await waitFor(() => counts.sent + counts.failed === 5, 20_000, 'every queued event settled')
  t.ok(counts.sent >= 1, `posted after the endpoint came back (${counts.sent})`)
  t.equal(e.hits.length, counts.sent)
  t.equal(d.queued, 0)
})

t.test('no answer within the timeout counts as no answer', async (t) => {
  const e = await endpoint(t)
  e.answer(() => 'hang')
  const { delivery: d, counts, ctx } = delivery(t, e.url(), { timeout: 200, retryTimes: 1 })
  d.offer(event('a', 1))
  await waitFor(() => counts.failed === 1, 10_000, 'given up')
  t.equal(e.hits.length, 2, 'tried twice')
  t.ok(ctx.raised.has(ALARM), 'the alarm stands')
  e.answer(() => 200)
  d.offer(event('a', 2))
  await waitFor(() => counts.sent === 1, 10_000, 'posted')
  t.notOk(ctx.raised.has(ALARM), 'cleared by the answer')
})

t.test('the queue is bounded by bytes too', async (t) => {
  const e = await endpoint(t)
  e.answer(() => 'hang')
  const { delivery: d, counts } = delivery(t, e.url(), { poolSize: 1, queueBytes: 4096 })
  for (let n = 0; n < 10; n++) d.offer(event('a', n, 1000))
  t.equal(d.queued, 4, '4 events of 1000 bytes fit in 4096')
  t.equal(counts.dropped, 6)
  t.ok(d.queuedBytes <= 4096)
})

t.test('close forgets the queue and ends the requests under way', async (t) => {
  const e = await endpoint(t)
  e.answer(() => 'hang')
  const { delivery: d, counts } = delivery(t, e.url(), { poolSize: 1 })
  for (let n = 0; n < 5; n++) d.offer(event('a', n))
  await e.waitFor(() => true)
  t.equal(d.queued, 5, 'one under way, four waiting')
  await d.close()
  d.offer(event('a', 9))
  t.equal(d.queued, 5, 'nothing is taken after close')
  t.equal(counts.sent, 0)
  await d.close()
})

t.test('a body that cannot be written is given up', async (t) => {
  const e = await endpoint(t)
  const { delivery: d, counts } = delivery(t, e.url())
  d.offer({ key: 'a', size: 10, body: () => { throw new Error('cycle') } })
  d.offer(event('a', 1))
  await waitFor(() => counts.sent === 1, 10_000, 'the next one posted')
  t.equal(counts.failed, 1)
})

t.test('TLS: the endpoint verified with web.hook.ssl.cacertfile, a client certificate presented', async (t) => {
  const certs = join(INSTALL_ROOT, 'etc/certs')
  const [ca, cert, key, clientCert, clientKey] = await Promise.all(['cacert.pem', 'cert.pem', 'key.pem', 'client-cert.pem', 'client-key.pem'].map(async (f) => await readFile(join(certs, f), 'utf8')))
  const e = await endpoint(t, { tls: { cert, key, ca, requestCert: true } })
  const url = `https://localhost:${e.port}/hook`
  const good = delivery(t, url, { tls: { ca, cert: clientCert, key: clientKey, verify: true } })
  good.delivery.offer(event('a', 1))
  await waitFor(() => good.counts.sent === 1, 10_000, 'posted over TLS')
  t.equal(e.hits[0].peerCN, 'demo-client', 'the client certificate')

  const unknownCa = delivery(t, url, { tls: { cert: clientCert, key: clientKey, verify: true }, retryTimes: 0 })
  unknownCa.delivery.offer(event('a', 2))
  await waitFor(() => unknownCa.counts.failed === 1, 10_000, 'refused')
  t.ok(unknownCa.ctx.raised.has(ALARM), 'a certificate the node cannot verify: the endpoint is unavailable')

  const unverified = delivery(t, url, { tls: { cert: clientCert, key: clientKey, verify: false } })
  unverified.delivery.offer(event('a', 3))
  await waitFor(() => unverified.counts.sent === 1, 10_000, 'posted with verify = false')

  const noClientCert = delivery(t, url, { tls: { ca, verify: true }, retryTimes: 0 })
  noClientCert.delivery.offer(event('a', 4))
  await waitFor(() => noClientCert.counts.failed === 1, 10_000, 'refused by the endpoint')
  t.equal(e.hits.length, 2)
})

/** SCHED_BATCH's number, in field 41 of /proc/<pid>/task/<tid>/stat */
const SCHED_BATCH = 3

/** A thread's scheduling policy (Linux), from its stat line; undefined when it cannot be read. */
async function policyOf (tid: number): Promise<number | undefined> {
  try {
    const stat = await readFile(`/proc/${process.pid}/task/${tid}/stat`, 'latin1')
    // the fields after the command name, which is in parentheses and may hold spaces: the state is field 3
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return Number(fields[41 - 3])
  } catch {
    return undefined
  }
}

t.test('the delivery thread runs under SCHED_BATCH (its wake-ups do not preempt the event loop) and still posts', { skip: process.platform !== 'linux' && 'Linux only' }, async (t) => {
  const e = await endpoint(t)
  const { delivery: d, counts } = delivery(t, e.url(), { thread: 'worker' })
  await waitFor(() => d.threadId !== undefined, 20_000, 'the thread said which it is')
  const tid = d.threadId as number
  t.not(tid, process.pid, 'a thread of its own')
  let policy: number | undefined
  await waitFor(async () => (policy = await policyOf(tid)) === SCHED_BATCH, 20_000, 'SCHED_BATCH')
  t.equal(policy, SCHED_BATCH)
  t.not(await policyOf(process.pid), SCHED_BATCH, 'the event loop\'s thread keeps its policy')
  for (let n = 0; n < 10; n++) d.offer(event('a', n))
  await waitFor(() => counts.sent === 10, 20_000, 'all 10 posted')
})

t.test("one connection's messages to one topic, many in a batch: every body whole, its own payload, qos and retain, across the thread's buffers", async (t) => {
  const e = await endpoint(t)
  const { delivery: d, counts } = delivery(t, e.url(), { thread: 'worker', queueSize: 2000, queueBytes: 64 * 1024 * 1024, encoding: 'base64', node: 'n1@127.0.0.1' })
  const publisher = { clientId: 'dev-9' }
  const payloadOf = (n: number): Buffer => Buffer.alloc(1000 + n % 7, n % 251)
  // ~600 kB in one batch: the texts are written once, the other 599 messages refer to them, across three 256 kB buffers
  for (let n = 0; n < 600; n++) d.publish(1300, { topic: 'up/dev-9', payload: payloadOf(n), qos: (n % 3) as 0 | 1 | 2, retain: n % 2 === 0, from: 'dev-9' }, 'u9', publisher)
  await waitFor(() => counts.sent === 600, 30_000, 'all 600 posted')
  t.equal(e.hits.length, 600)
  const wrong = e.hits.filter((h, n) => {
    const b = h.body
    return b.action !== 'message_publish' || b.node !== 'n1@127.0.0.1' || b.from_client_id !== 'dev-9' || b.from_username !== 'u9' || b.topic !== 'up/dev-9' ||
      b.qos !== n % 3 || b.retain !== (n % 2 === 0) || b.payload !== payloadOf(n).toString('base64') || typeof b.ts !== 'number'
  })
  t.same(wrong.map((h) => h.body), [], 'each body is its message, in order')
})

t.test("a message.publish and the client's next event of the same callback are posted in that order; waiting, they count in the queue", async (t) => {
  const e = await endpoint(t)
  const { delivery: d, counts } = delivery(t, e.url(), { queueSize: 3, queueBytes: 1000 })
  const publisher = { clientId: 'dev-1' }
  d.publish(200, { topic: 'up/1', payload: Buffer.from('p1'), qos: 0, retain: false, from: 'dev-1' }, null, publisher)
  t.same([d.queued, d.queuedBytes], [1, 200], 'a message waiting for the end of the callback is queued')
  d.offer({ key: '"dev-1"', size: 300, body: () => JSON.stringify({ action: 'client_disconnected', clientid: 'dev-1' }) })
  d.publish(300, { topic: 'up/1', payload: Buffer.from('p2'), qos: 0, retain: false, from: 'dev-1' }, null, publisher)
  d.publish(300, { topic: 'up/1', payload: Buffer.from('p3'), qos: 0, retain: false, from: 'dev-1' }, null, publisher)
  t.same([d.queued, d.queuedBytes, counts.dropped], [3, 800, 1], 'the queue bound counts the waiting messages: the fourth event is dropped')
  await waitFor(() => counts.sent === 3, 20_000, 'the three posted')
  t.same(e.hits.map((h) => h.body.action === 'message_publish' ? h.body.payload : h.body.action), ['p1', 'client_disconnected', 'p2'], 'in the order they came')
})

t.test('a message.publish taken in the callback that unloads the plugin is forgotten with the queue: not posted, not counted', async (t) => {
  const e = await endpoint(t)
  const { delivery: d, counts } = delivery(t, e.url(), { thread: 'worker' })
  d.publish(200, { topic: 'up/1', payload: Buffer.from('late'), qos: 0, retain: false, from: 'dev-1' }, null, { clientId: 'dev-1' })
  // unloaded in the same callback: close runs before the callback's messages are written
  await d.close()
  await new Promise((resolve) => setTimeout(resolve, 50))
  t.equal(d.queued, 0, 'nothing left counted')
  t.equal(counts.sent + counts.failed, 0)
  t.equal(e.hits.length, 0, 'nothing posted')
})

t.test('a payload goes as the JSON string of its bytes read as UTF-8, as JSON.stringify(payload.toString()) writes it, whatever the bytes', async (t) => {
  const e = await endpoint(t)
  const { delivery: d, counts } = delivery(t, e.url(), { queueSize: 5000, queueBytes: 64 * 1024 * 1024 })
  const hex = (text: string): Buffer => Buffer.from(text.replace(/\s/g, ''), 'hex')
  const cases: Buffer[] = [
    Buffer.alloc(0), Buffer.from('{"temp": 21.5, "unit": "°C"}'), Buffer.from('back\\slash "quoted"\ttab\nline\r\b\f\u0000\u001f\u007f'),
    Buffer.from('U+2028 \u2028, emoji 😀, CJK 漢字, BOM \ufeff'), Buffer.alloc(200, 'x'), Buffer.from(`${'y'.repeat(100)}"${'z'.repeat(100)}`),
    // the edges of valid sequences, and the invalid ones: surrogates, overlong forms, past U+10FFFF, cut short, stray continuation bytes
    hex('c2 80 df bf e0 a0 80 ed 9f bf ee 80 80 ef bf bf f0 90 80 80 f4 8f bf bf'), hex('ed a0 80 ed bf bf'), hex('c0 80 c1 bf e0 80 80 e0 9f bf f0 80 80 80 f0 8f bf bf'),
    hex('f4 90 80 80 f5 80 80 80 ff fe'), hex('e2 82'), hex('f0 9f 98'), hex('e2 82 41'), hex('f0 9f 41 42'), hex('80 bf 41 c2'), hex('c2 c2 a9 e2 e2 82 ac')
  ]
  for (let b = 0; b < 256; b++) cases.push(Buffer.from([b]), Buffer.from([0x41, b, 0x42]))
  // random bytes from an alphabet weighted toward what decides: ASCII, controls, quotes, lead and continuation bytes
  let seed = 17
  const random = (n: number): number => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n }
  const alphabet = [0x41, 0x20, 0x22, 0x5c, 0x00, 0x0a, 0x1f, 0x7f, 0x80, 0x9f, 0xa0, 0xbf, 0xc2, 0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff]
  for (let n = 0; n < 1500; n++) cases.push(Buffer.from(Array.from({ length: random(24) }, () => random(3) === 0 ? random(256) : alphabet[random(alphabet.length)])))
  const publisher = { clientId: 'dev-u' }
  cases.forEach((payload) => d.publish(300, { topic: 'u', payload, qos: 0, retain: false, from: 'dev-u' }, null, publisher))
  await waitFor(() => counts.sent === cases.length, 30_000, 'all posted')
  const wrong = e.hits.map((h, n) => ({ n, got: /"payload":(.*),"ts":/s.exec(h.raw)?.[1], want: JSON.stringify(cases[n].toString('utf8')) })).filter(({ got, want }) => got !== want)
  t.same(wrong.slice(0, 5), [], `each of ${cases.length} bodies has its payload's JSON string, byte for byte`)
})

t.test('a batch goes to the thread before batch_time once it holds a quarter of queue_size, and 1 000 events at most', async (t) => {
  const e = await endpoint(t)
  // batch_time a minute: an event posted within the waits below went for the count
  const small = delivery(t, e.url('/small'), { batchTime: 60_000, queueSize: 40 })
  for (let n = 0; n < 9; n++) small.delivery.offer(event('a', n))
  const large = delivery(t, e.url('/large'), { batchTime: 60_000, queueSize: 100_000, pipelining: 256 })
  for (let n = 0; n < 999; n++) large.delivery.offer(event('b', n))
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.same([small.counts.sent, large.counts.sent, e.hits.length], [0, 0, 0], 'short of either bound, the events wait for batch_time')
  small.delivery.offer(event('a', 9))
  await waitFor(() => small.counts.sent === 10, 20_000, 'the tenth event (a quarter of 40) sends the batch')
  large.delivery.offer(event('b', 999))
  await waitFor(() => large.counts.sent === 1000, 20_000, 'the 1 000th event sends the batch')
  t.same(e.hits.filter((h) => h.path === '/large').map((h) => h.body.n), Array.from({ length: 1000 }, (_, n) => n), 'in order')
  small.delivery.offer(event('a', 10))
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.equal(small.counts.sent, 10, 'the next event starts a batch that waits again')
  t.equal(small.delivery.queued, 1)
})
