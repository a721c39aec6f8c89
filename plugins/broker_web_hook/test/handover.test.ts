// The batch the event loop writes and the delivery thread reads (handover.ts):
// every field comes back as the JSON text the body needs, in UTF-8 bytes (read at the offsets the thread is given),
// whatever the string holds, and a batch that outgrows its buffer keeps all of it.
import t from 'tap'
import { Batch, PendingPublishes, readBatch } from '../handover.js'

interface Read { kind: 'body' | 'publish' | 'repeat', key: string, size: number, fields: unknown[] }

function read (batch: Batch): { events: number, size: number, read: Read[] } {
  const { bytes, length, events, size } = batch.take()
  const view = Buffer.from(bytes)
  const out: Read[] = []
  const text = (start: number, end: number): string => view.toString('utf8', start, end)
  readBatch(view, length, (r) => {
    const key = text(r.keyStart, r.keyEnd)
    if (r.kind === 0) out.push({ kind: 'body', key, size: r.size, fields: [JSON.parse(text(r.bodyStart, r.bodyEnd))] })
    else {
      out.push({
        kind: r.kind === 2 ? 'repeat' : 'publish', key, size: r.size,
        fields: [JSON.parse(text(r.userStart, r.userEnd)), JSON.parse(text(r.topicStart, r.topicEnd)), r.qos, r.retain, r.ts, view.subarray(r.payloadStart, r.payloadEnd).toString('hex')]
      })
    }
  })
  // the buffer is transferred to the delivery thread: detached here, as postMessage leaves it
  structuredClone(bytes, { transfer: [bytes] })
  return { events, size, read: out }
}

t.test('fields of every kind come back as their JSON text, in order', async (t) => {
  const batch = new Batch()
  const ts = 1_764_000_000_123
  batch.publish(300, { topic: 'a/b', payload: Buffer.from('hi'), qos: 1, retain: false, from: 'pub-1' }, null, ts)
  batch.body('sub "1"', 280, JSON.stringify({ action: 'client_connected', clientid: 'sub "1"' }))
  batch.publish(310, { topic: 'température/\u0001/"x"\\', payload: Buffer.from([0xff, 0x00]), qos: 2, retain: true, from: 'é-client' }, 'ünïcode 😀', ts + 1)
  batch.publish(320, { topic: '', payload: Buffer.alloc(0), qos: 0, retain: false }, '', ts + 2)
  const { events, size, read: got } = read(batch)
  t.equal(events, 4)
  t.equal(size, 1210, 'the sizes add up for queue_bytes')
  t.same(got, [
    { kind: 'publish', key: '"pub-1"', size: 300, fields: [null, 'a/b', 1, false, ts, '6869'] },
    { kind: 'body', key: '"sub \\"1\\""', size: 280, fields: [{ action: 'client_connected', clientid: 'sub "1"' }] },
    { kind: 'publish', key: '"é-client"', size: 310, fields: ['ünïcode 😀', 'température/\u0001/"x"\\', 2, true, ts + 1, 'ff00'] },
    { kind: 'publish', key: 'null', size: 320, fields: ['', '', 0, false, ts + 2, ''] }
  ])
})

t.test('a batch larger than its buffer grows and keeps every event; the next batch starts empty', async (t) => {
  const batch = new Batch()
  const payload = Buffer.alloc(5000, 7)
  for (let n = 0; n < 100; n++) batch.publish(5000, { topic: `t/${n}`, payload, qos: 0, retain: false, from: `c${n % 3}` }, 'u', n)
  const { events, read: got } = read(batch)
  t.equal(events, 100)
  t.same(got.map((r) => r.fields[1]), Array.from({ length: 100 }, (_, n) => `t/${n}`))
  t.ok(got.every((r) => r.fields[5] === payload.toString('hex')), 'every payload whole')
  t.same(read(batch), { events: 0, size: 0, read: [] })
})

t.test("a publisher's texts kept for its next message are the ones its message has, in this batch and the next", async (t) => {
  const batch = new Batch()
  const connection = {}
  const other = {}
  const send = (on: object, from: string | undefined, username: string | null, topic: string, n: number): void =>
    batch.publish(300, { topic, payload: Buffer.from([n]), qos: 1, retain: false, from }, username, n, on)
  // the same topic three times (kept from the second), then another, then back; the user name and the id change
  send(connection, 'dev-1', 'alice', 'up/1', 1)
  send(connection, 'dev-1', 'alice', 'up/1', 2)
  send(other, 'dev-2', null, 'up/"2"', 3)
  send(connection, 'dev-1', 'alice', 'up/1', 4)
  send(connection, 'dev-1', 'alice', 'down/é', 5)
  send(connection, 'dev-1', 'alice', 'up/1', 6)
  send(connection, 'dev-1', 'bob', 'up/1', 7)
  send(connection, 'dev-1b', 'bob', 'up/1', 8)
  const first = read(batch).read
  send(connection, 'dev-1b', 'bob', 'up/1', 9)
  send(connection, 'dev-1b', 'bob', 'up/1', 10)
  const next = read(batch).read
  const fields = (got: Read[]): unknown[] => got.map((r) => [r.key, r.fields[0], r.fields[1], r.fields[4], r.fields[5]])
  // the texts go once a batch for each connection and topic: a message with the same ones after it refers to that record
  t.same(first.map((r) => r.kind), ['publish', 'repeat', 'publish', 'repeat', 'publish', 'publish', 'publish', 'publish'])
  t.same(next.map((r) => r.kind), ['publish', 'repeat'], 'a new batch writes them again')
  t.same(fields(first), [
    ['"dev-1"', 'alice', 'up/1', 1, '01'],
    ['"dev-1"', 'alice', 'up/1', 2, '02'],
    ['"dev-2"', null, 'up/"2"', 3, '03'],
    ['"dev-1"', 'alice', 'up/1', 4, '04'],
    ['"dev-1"', 'alice', 'down/é', 5, '05'],
    ['"dev-1"', 'alice', 'up/1', 6, '06'],
    ['"dev-1"', 'bob', 'up/1', 7, '07'],
    ['"dev-1b"', 'bob', 'up/1', 8, '08']
  ])
  t.same(fields(next), [['"dev-1b"', 'bob', 'up/1', 9, '09'], ['"dev-1b"', 'bob', 'up/1', 10, '0a']], 'texts kept across batches: copies, not views of a transferred buffer')
})

t.test('the message.publish events of one callback are written at its end, in order, with the clock read when the first came', async (t) => {
  const pending = new PendingPublishes()
  const batch = new Batch()
  const connection = {}
  const message = (n: number): { topic: string, payload: Buffer, qos: 0, retain: boolean, from: string } => ({ topic: `up/${n % 2}`, payload: Buffer.from([n]), qos: 0, retain: n === 2, from: 'dev-1' })
  const before = Date.now()
  t.equal(pending.add(100, message(0), 'alice', connection), true, 'the first of a callback: its caller arranges the write')
  t.equal(pending.add(110, message(1), 'alice', connection), false)
  t.equal(pending.add(120, message(2), null), false, 'a message with no connection (the node\'s own)')
  const after = Date.now()
  t.equal(pending.events, 3)
  t.equal(pending.size, 330, 'their sizes count in queue_bytes while they wait')
  t.equal(batch.events, 0, 'nothing written yet')
  pending.writeTo(batch)
  t.same([pending.events, pending.size], [0, 0], 'written, let go of')
  const got = read(batch).read
  t.same(got.map((r) => [r.kind, r.key, r.size, r.fields[0], r.fields[1], r.fields[3], r.fields[5]]), [
    ['publish', '"dev-1"', 100, 'alice', 'up/0', false, '00'],
    ['publish', '"dev-1"', 110, 'alice', 'up/1', false, '01'],
    ['publish', '"dev-1"', 120, null, 'up/0', true, '02']
  ])
  const stamps = new Set(got.map((r) => r.fields[4]))
  t.equal(stamps.size, 1, 'one reading of the clock for the callback')
  const [ts] = stamps as Set<number>
  t.ok(ts >= before && ts <= after, `ts ${ts} read when the first came (${before}–${after})`)
  // the next callback's events: a new reading, and the same connection's texts again as a repeat of its record in this batch
  t.equal(pending.add(100, message(3), 'alice', connection), true, 'the first of the next callback')
  t.equal(pending.add(100, message(5), 'alice', connection), false)
  pending.writeTo(batch)
  t.same(read(batch).read.map((r) => [r.kind, r.fields[1], r.fields[5]]), [['publish', 'up/1', '03'], ['repeat', 'up/1', '05']])
})
