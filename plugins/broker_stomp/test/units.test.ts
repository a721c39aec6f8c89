// The pieces of broker_stomp without a node: the frame parser and
// serializer (STOMP 1.2 §Frames, escaping, limits), version and heart-beat
// negotiation, the subscriptions' acknowledgement modes and the
// transactions' bounds.
import t from 'tap'
import { fakeContext } from '../../../lib/plugin-kit/testing.js'
import { FrameError, FrameParser, serialize, type FrameLimits, type StompFrame } from '../frame.js'
import { negotiate, replyHeader, startHeartbeat, MIN_HEARTBEAT_MS } from '../heartbeat.js'
import { negotiateVersion } from '../session.js'
import { Subscriptions } from '../subscriptions.js'
import { MAX_FRAMES, MAX_OPEN, Transactions } from '../transactions.js'

const LIMITS: FrameLimits = { maxHeaders: 10, maxHeaderLength: 1024, maxBodyLength: 8192 }

function parser (limits: Partial<FrameLimits> = {}, version = '1.2'): { frames: StompFrame[], beats: () => number, push: (bytes: string | Buffer) => void } {
  const frames: StompFrame[] = []
  let beats = 0
  const p = new FrameParser(() => ({ ...LIMITS, ...limits }), (f) => frames.push(f), () => { beats++ })
  p.version = version
  return { frames, beats: () => beats, push: (bytes) => p.push(Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes)) }
}

const headersOf = (f: StompFrame): Record<string, string> => Object.fromEntries(f.headers)

t.test('frames split anywhere across reads, and several in one read', async (t) => {
  const bytes = 'SEND\ndestination:a/b\nreceipt:1\n\nhello\0\n\nSUBSCRIBE\r\nid:0\r\ndestination:x/#\r\n\r\n\0'
  const whole = parser()
  whole.push(bytes)
  t.same(whole.frames.map((f) => [f.command, headersOf(f), f.body.toString()]), [
    ['SEND', { destination: 'a/b', receipt: '1' }, 'hello'],
    ['SUBSCRIBE', { id: '0', destination: 'x/#' }, '']
  ], 'two frames in one read; CR LF line ends')
  const wrong: number[] = []
  for (let cut = 1; cut < bytes.length; cut++) {
    const p = parser()
    p.push(bytes.slice(0, cut))
    p.push(bytes.slice(cut))
    if (JSON.stringify(p.frames) !== JSON.stringify(whole.frames)) wrong.push(cut)
  }
  t.same(wrong, [], 'the same frames wherever the bytes are cut')
  const byteByByte = parser()
  for (const ch of bytes) byteByByte.push(ch)
  t.equal(byteByByte.frames.length, 2)
  t.equal(byteByByte.beats(), 2, 'the EOLs after a frame are heart-beats')
})

t.test('content-length: a body with NULs, and the NUL after it is required', async (t) => {
  const p = parser()
  p.push(Buffer.concat([Buffer.from('SEND\ndestination:a\ncontent-length:5\n\n'), Buffer.from([1, 0, 2, 0, 3]), Buffer.from([0])]))
  t.same([...p.frames[0].body], [1, 0, 2, 0, 3])
  t.throws(() => parser().push('SEND\ncontent-length:2\n\nabc\0'), { kind: 'malformed', message: /no NUL after the 2 bytes/ })
  t.throws(() => parser().push('SEND\ncontent-length:-1\n\n\0'), { kind: 'malformed', message: /not a byte count/ })
  t.throws(() => parser().push('SEND\ncontent-length:9999\n\n'), { kind: 'too_large', message: /9999 bytes is over 8192/ })
})

t.test('escaping: 1.2 decodes \\r \\n \\c \\\\, 1.1 all but \\r, 1.0 and CONNECT none', async (t) => {
  const v12 = parser()
  v12.push('SEND\ndestination:a\nx\\cy:1\\n2\\r3\\\\4\\c\n\n\0')
  t.same(headersOf(v12.frames[0]), { destination: 'a', 'x:y': '1\n2\r3\\4:' })
  t.throws(() => parser({}, '1.2').push('SEND\nk:\\t\n\n\0'), { kind: 'malformed', message: /undefined escape sequence \\t/ })
  t.throws(() => parser({}, '1.1').push('SEND\nk:\\r\n\n\0'), { name: 'FrameError', kind: 'malformed' }, '1.1 has no \\r')
  const v10 = parser({}, '1.0')
  v10.push('SEND\nk:a\\nb\n\n\0')
  t.equal(v10.frames[0].headers.get('k'), 'a\\nb', '1.0 takes backslashes as they are')
  const connect = parser({}, '1.2')
  connect.push('CONNECT\npasscode:a\\cb\n\n\0')
  t.equal(connect.frames[0].headers.get('passcode'), 'a\\cb', 'CONNECT is never unescaped')
  t.equal(serialize('MESSAGE', [['k:1', 'a\nb\r\\']], undefined, '1.2').toString(), 'MESSAGE\nk\\c1:a\\nb\\r\\\\\n\n\0')
  t.equal(serialize('MESSAGE', [['k', 'a\r']], undefined, '1.1').toString(), 'MESSAGE\nk:a\r\n\n\0', '1.1 does not escape CR')
  t.equal(serialize('MESSAGE', [['k', 'a\nb']], undefined, '1.0').toString(), 'MESSAGE\nk:a b\n\n\0', '1.0 flattens a line break')
  t.equal(serialize('CONNECTED', [['server', 'a:b']], undefined, '1.2').toString(), 'CONNECTED\nserver:a:b\n\n\0')
  t.equal(serialize('MESSAGE', [], Buffer.from('x\0y'), '1.2').toString(), 'MESSAGE\ncontent-length:3\n\nx\0y\0')
})

t.test('the first of a repeated header counts', async (t) => {
  const p = parser()
  p.push('SEND\ndestination:first\ndestination:second\n\n\0')
  t.equal(p.frames[0].headers.get('destination'), 'first')
})

t.test('limits: header count, header length, body length; each refused as too_large before it is buffered', async (t) => {
  t.throws(() => parser({ maxHeaders: 2 }).push('SEND\na:1\nb:2\nc:3\n\n\0'), { kind: 'too_large', message: /more than 2 headers/ })
  t.throws(() => parser({ maxHeaderLength: 16 }).push(`SEND\nk:${'v'.repeat(20)}\n\n\0`), { kind: 'too_large', message: /longer than 16 bytes/ })
  t.throws(() => parser({ maxHeaderLength: 16 }).push(`SEND\nk:${'v'.repeat(40)}`), { name: 'FrameError', kind: 'too_large' }, 'a header line refused before its end comes')
  t.throws(() => parser({ maxBodyLength: 4 }).push('SEND\n\n12345\0'), { kind: 'too_large', message: /over 4 bytes/ })
  const slow = parser({ maxBodyLength: 4 })
  slow.push('SEND\n\n123')
  t.throws(() => slow.push('45'), { name: 'FrameError', kind: 'too_large' }, 'a body without content-length refused once it passes the limit')
  const exact = parser({ maxBodyLength: 4, maxHeaderLength: 16 })
  exact.push(`SEND\n${'k'.repeat(10)}:${'v'.repeat(5)}\n\n1234\0`)
  t.equal(exact.frames.length, 1, 'at the limits exactly is accepted')
})

t.test('malformed: unknown command, no colon, empty name, a bare CR', async (t) => {
  t.throws(() => parser().push('HELLO\n\n\0'), { kind: 'malformed', message: /unknown command "HELLO"/ })
  t.throws(() => parser().push('GET / HTTP/1.1 and more and more'), { kind: 'malformed', message: /not a STOMP command/ })
  t.throws(() => parser().push('SEND\nnocolon\n\n\0'), { kind: 'malformed', message: /without a colon/ })
  t.throws(() => parser().push('SEND\n:value\n\n\0'), { kind: 'malformed', message: /empty name/ })
  t.throws(() => parser().push('\rX'), { kind: 'malformed', message: /CR not followed by LF/ })
  t.type(new FrameError('malformed', 'x'), Error)
})

t.test('version negotiation: the highest offered, 1.0 without accept-version, none in common refused', async (t) => {
  t.equal(negotiateVersion(undefined), '1.0')
  t.equal(negotiateVersion('1.0,1.1,1.2'), '1.2')
  t.equal(negotiateVersion('1.1, 1.0'), '1.1')
  t.equal(negotiateVersion('2.0,1.0'), '1.0')
  t.equal(negotiateVersion('2.0'), undefined)
})

t.test('heart-beats: agreed both ways, never under a second, malformed refused', async (t) => {
  t.same(negotiate(undefined), { send: 0, expect: 0 })
  t.same(negotiate('0,0'), { send: 0, expect: 0 })
  t.same(negotiate('4000,2000'), { send: 2000, expect: 4000 })
  t.same(negotiate('10,1'), { send: MIN_HEARTBEAT_MS, expect: MIN_HEARTBEAT_MS })
  t.equal(replyHeader({ send: 2000, expect: 4000 }), '2000,4000')
  t.match(negotiate('x,1'), /not <ms>,<ms>/)
  t.match(negotiate('1'), /not <ms>,<ms>/)
})

t.test('heart-beat timers: an EOL when idle, dead after twice the silence, nothing after stop', async (t) => {
  const ctx = fakeContext('broker_stomp', {})
  t.teardown(ctx.unload)
  let beats = 0
  let dead = 0
  const idle = { read: Date.now(), written: Date.now() }
  const running = startHeartbeat(ctx.timers, { send: 1000, expect: 1000 }, { idleSince: () => idle, beat: () => { beats++ }, dead: () => { dead++ } })
  await new Promise((resolve) => setTimeout(resolve, 3300))
  running.stop()
  t.ok(beats >= 1, `beats ${beats}`)
  t.ok(dead >= 1, 'nothing read for over two intervals')
  const [b, d] = [beats, dead]
  await new Promise((resolve) => setTimeout(resolve, 1200))
  t.same([beats, dead], [b, d], 'stopped')
})

t.test('acknowledgements: auto at once, client cumulative, client-individual one by one, NACK refuses', async (t) => {
  const subs = new Subscriptions()
  const acks: Array<[string, number | undefined]> = []
  const sent: Array<[string, string]> = []
  const send = (s: { id: string }, messageId: string): void => { sent.push([s.id, messageId]) }
  t.equal(subs.add('auto', 'a/#', 'auto'), true)
  t.equal(subs.add('cum', 'a/+', 'client'), true)
  t.equal(subs.add('one', '$share/g/a/b', 'client-individual'), true)
  t.equal(subs.add('again', 'a/+', 'auto'), false, 'a destination subscribed already')
  const deliver = (name: string, topic = 'a/b', qos = 1): number => subs.deliver(topic, qos, (code) => acks.push([name, code]), send)
  t.equal(deliver('m1'), 4, 'one copy per matching subscription')
  t.equal(deliver('m2', 'a/c'), 3, 'the shared subscription matches its filter only')
  t.same(acks, [], 'waiting for the client subscriptions')
  const ids = (sub: string): string[] => sent.filter(([s]) => s === sub).map(([, m]) => m)
  t.ok(subs.acknowledge(ids('one')[0], false))
  t.same(acks, [], 'm1 still waits for the cumulative subscription')
  t.ok(subs.acknowledge(ids('cum')[1], false), 'cumulative ACK of the second covers the first')
  t.same(acks, [['m1', 0], ['m2', 0]])
  t.equal(subs.acknowledge(ids('cum')[0], false), false, 'acknowledged already')
  deliver('m3', 'a/b')
  t.ok(subs.acknowledge(ids('cum')[2], true))
  t.ok(subs.acknowledge(ids('one')[1], false))
  t.same(acks.at(-1), ['m3', 0x80], 'a NACKed copy refuses the message')
  deliver('m4', 'a/b', 0)
  t.same(acks.at(-1), ['m4', undefined], 'QoS 0: nothing awaits an ACK')
  deliver('m5', 'z/z')
  t.same(acks.at(-1), ['m5', undefined], 'no subscription matches: acknowledged')
  deliver('m6', 'a/b')
  t.equal(subs.remove('cum'), false, 'another subscription still has a/+')
  t.same(acks.at(-1), ['m5', undefined], 'm6 still waits for client-individual')
  t.equal(subs.remove('one'), true, 'the last of its destination')
  t.same(acks.at(-1), ['m6', 0], 'removing a subscription settles its copies')
  t.equal(subs.remove('nope'), false)
  t.equal(subs.size, 2)
})

t.test('transactions: begin, hold, commit in order, abort, bounds, timeout', async (t) => {
  const ctx = fakeContext('broker_stomp', {})
  t.teardown(ctx.unload)
  const tx = new Transactions(ctx.timers, () => 8192)
  const f = (body = ''): StompFrame => ({ command: 'SEND', headers: new Map(), body: Buffer.from(body) })
  t.equal(tx.begin('t1'), undefined)
  t.match(tx.begin('t1'), /already started/)
  t.match(tx.add('t2', f()), /not found/)
  const [a, b] = [f('a'), f('b')]
  t.equal(tx.add('t1', a), undefined)
  t.equal(tx.add('t1', b), undefined)
  t.same(tx.commit('t1'), [a, b])
  t.match(tx.commit('t1'), /not found/)
  t.equal(tx.begin('t3'), undefined)
  t.equal(tx.abort('t3'), undefined)
  t.match(tx.abort('t3'), /not found/)
  for (let i = 0; i < MAX_OPEN; i++) t.equal(tx.begin(`open${i}`), undefined)
  t.match(tx.begin('one too many'), /more than 16 transactions/)
  for (let i = 0; i < MAX_FRAMES; i++) tx.add(`open${i % MAX_OPEN}`, f())
  t.match(tx.add('open0', f()), /more than 1000 frames/)
  tx.clear()
  t.equal(tx.begin('big'), undefined)
  t.equal(tx.add('big', f('x'.repeat(1024 * 1024))), undefined)
  t.match(tx.add('big', f('x'.repeat(8193))), /bytes held/)
})
