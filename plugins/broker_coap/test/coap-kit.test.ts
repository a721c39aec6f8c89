// The kit's CoAP layer (lib/plugin-kit/coap) without a node: the codec
// against RFC 7252's byte layouts, the Block option (RFC 7959), and the
// endpoint over an in-memory transport (deduplication, CON retransmission,
// Block1 and Block2, ping, malformed datagrams).
import t from 'tap'
import { coap } from '../../../lib/plugin-kit/index.js'

const { CODE, OPTION, TYPE } = coap
const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex')

t.test('codec: RFC 7252 byte layouts', async (t) => {
  // RFC 7252 Figure 16's GET /temperature as CON, message id 0x7d34, no token
  const get = hex('40 01 7d 34 bb')
  const bytes = Buffer.concat([get, Buffer.from('temperature')])
  const message = coap.parse(bytes)
  t.match(message, { type: TYPE.CON, code: CODE.GET, messageId: 0x7d34 })
  t.equal(message.token.length, 0)
  t.same(coap.uriOf(message), { path: ['temperature'], query: [] })
  t.same(coap.serialize(message), bytes, 'written back byte for byte')

  // its piggybacked answer: ACK 2.05 "22.3 C"
  const ack = Buffer.concat([hex('60 45 7d 34 ff'), Buffer.from('22.3 C')])
  const answer = coap.parse(ack)
  t.match(answer, { type: TYPE.ACK, code: CODE.CONTENT, messageId: 0x7d34 })
  t.equal(answer.payload.toString(), '22.3 C')
  t.equal(coap.codeText(answer.code), '2.05')
  t.same(coap.serialize(answer), ack)

  // a token, extended option deltas (13: +1 byte, 14: +2 bytes) and an extended length
  const built: coap.CoapMessage = {
    type: TYPE.NON,
    code: CODE.PUT,
    messageId: 1,
    token: hex('a1b2c3d4'),
    options: [
      { number: OPTION.NO_RESPONSE, value: Buffer.from([26]) },
      { number: OPTION.URI_PATH, value: Buffer.from('x'.repeat(20)) },
      { number: 1000, value: Buffer.alloc(0) }
    ],
    payload: Buffer.from('p')
  }
  const wire = coap.serialize(built)
  t.same(wire.subarray(0, 8), hex('54 03 00 01 a1b2c3d4'), 'header: version 1, NON, TKL 4, 0.03, mid 1, token')
  // Uri-Path (11) first: delta 11, length 13 + 7
  t.same(wire.subarray(8, 10), hex('bd 07'))
  // No-Response (258): delta 247 = 13 + 234, length 1
  t.same(wire.subarray(30, 33), hex('d1 ea 1a'))
  // option 1000: delta 742 = 269 + 473 (0x01d9), length 0
  t.same(wire.subarray(33, 36), hex('e0 01 d9'))
  t.same(wire.subarray(36), hex('ff 70'))
  t.same(coap.parse(wire).options.map((o) => o.number), [11, 258, 1000])

  t.same(coap.uintOption(0), Buffer.alloc(0), 'uint 0 is the empty value')
  t.same(coap.uintOption(0x1234), hex('1234'))
  t.equal(coap.readUint(hex('010203')), 0x010203)
  t.equal(coap.readUint(hex('0102030405')), undefined)
  t.equal(coap.unknownCritical(coap.parse(wire)), undefined, '1000 is elective (even)')
  t.equal(coap.unknownCritical({ ...built, options: [{ number: 1001, value: Buffer.alloc(0) }] }), 1001)
})

t.test('codec: format errors are refused, with the message id when the header was readable', async (t) => {
  const refused = (bytes: Buffer, why: RegExp, messageId?: number): void => {
    let caught: unknown
    try {
      coap.parse(bytes)
    } catch (err) {
      caught = err
    }
    t.ok(caught instanceof coap.CoapFormatError, `${why.source}: a CoapFormatError`)
    t.match((caught as Error).message, why)
    t.equal((caught as coap.CoapFormatError).messageId, messageId, `${why.source}: message id`)
  }
  refused(hex('40 01'), /shorter than the 4-byte header/)
  refused(hex('80 01 00 01'), /version 2/)
  refused(hex('49 01 00 07 0102030405060708 09'), /token length 9/, 7)
  refused(hex('44 01 00 08 0102'), /token is cut short/, 8)
  refused(hex('40 01 00 09 ff'), /payload marker with no payload/, 9)
  refused(hex('40 01 00 0a f1 00'), /reserved/, 10)
  refused(hex('40 01 00 0b 1f'), /reserved/, 11)
  refused(hex('40 01 00 0c b5 61 62'), /option 11 is cut short/, 12)
  refused(hex('40 01 00 0d d0'), /option header is cut short/, 13)
  refused(hex('41 00 00 0e 01'), /Empty message/, 14)
  refused(Buffer.concat([hex('40 01 00 0f'), Buffer.alloc(coap.MAX_OPTIONS + 1, 0x00)]), /more than 64 options/, 15)
  t.match(coap.parse(hex('40 00 12 34')), { code: CODE.EMPTY, messageId: 0x1234 }, 'an Empty CON (ping)')
})

t.test('Block option (RFC 7959 §2.2)', async (t) => {
  t.same(coap.readBlock(hex('2e')), { num: 2, more: true, szx: 6 })
  t.same(coap.blockOption({ num: 2, more: true, szx: 6 }), hex('2e'))
  t.same(coap.readBlock(Buffer.alloc(0)), { num: 0, more: false, szx: 0 }, 'the empty value is block 0 of 16 bytes')
  t.same(coap.blockOption({ num: 0xfffff, more: false, szx: 2 }), hex('fffff2'), 'the largest NUM in 3 bytes')
  t.equal(coap.readBlock(hex('07')), undefined, 'SZX 7 is reserved')
  t.equal(coap.readBlock(hex('01020304')), undefined, 'more than 3 bytes')
  t.equal(coap.blockSize(2), 64)
  t.same(coap.sliceBlock(Buffer.from('abcdefghij'), 0, 0), { payload: Buffer.from('abcdefghij'), more: false })
  t.same(coap.sliceBlock(Buffer.alloc(40, 1), 2, 0), { payload: Buffer.alloc(8, 1), more: false })
  t.equal(coap.sliceBlock(Buffer.alloc(32), 2, 0), undefined)

  const assembler = new coap.Block1Assembler(100, { entries: 2, bytes: 1000, lifetimeMs: 60_000 })
  t.same(assembler.add('k', { num: 0, more: true, szx: 1 }, Buffer.alloc(32, 1)), { kind: 'continue' })
  t.match(assembler.add('k', { num: 2, more: true, szx: 1 }, Buffer.alloc(32, 3)), { kind: 'incomplete', why: /not the next/ })
  t.match(assembler.add('k', { num: 1, more: false, szx: 1 }, Buffer.alloc(1)), { kind: 'incomplete', why: /first block is unknown/ }, 'the out-of-order block dropped the body')
  assembler.add('k', { num: 0, more: true, szx: 1 }, Buffer.alloc(32, 1))
  // a smaller block size mid-way, at the right byte offset
  t.same(assembler.add('k', { num: 2, more: true, szx: 0 }, Buffer.alloc(16, 2)), { kind: 'continue' })
  const done = assembler.add('k', { num: 3, more: false, szx: 0 }, Buffer.from('end'))
  t.equal(done.kind, 'complete')
  t.same((done as { body: Buffer }).body, Buffer.concat([Buffer.alloc(32, 1), Buffer.alloc(16, 2), Buffer.from('end')]))
  t.match(assembler.add('k', { num: 0, more: true, szx: 1 }, Buffer.alloc(31)), { kind: 'incomplete', why: /31 bytes, not 32/ })
  t.match(assembler.add('big', { num: 0, more: true, szx: 6 }, Buffer.alloc(1024)), { kind: 'too_large' })
  t.match(assembler.add('big', { num: 0, more: true, szx: 1 }, Buffer.alloc(32), 101), { kind: 'too_large', why: /Size1 101/ })
  for (const key of ['a', 'b', 'c']) assembler.add(key, { num: 0, more: true, szx: 1 }, Buffer.alloc(32))
  t.equal(assembler.size, 2, 'bounded: the oldest body is dropped for a new one')
})

interface Wire { sent: Array<{ bytes: Buffer, peer: coap.CoapPeer }>, endpoint: coap.CoapEndpoint, handled: coap.CoapRequest[], counts: Record<string, number> }

function endpoint (t: { teardown: (fn: () => void) => void }, answer: (request: coap.CoapRequest, respond: coap.Respond) => void = (_r, respond) => respond({ code: CODE.CHANGED }), maxBody = 4096): Wire {
  const sent: Wire['sent'] = []
  const handled: coap.CoapRequest[] = []
  const counts: Record<string, number> = {}
  const counter = (name: string): coap.EndpointCounter => ({ inc: () => { counts[name] = (counts[name] ?? 0) + 1 } })
  const timers: coap.EndpointTimers = {
    setTimeout: (run, ms) => { const timer = setTimeout(run, ms); return { cancel: () => clearTimeout(timer) } },
    setInterval: (run, ms) => { const timer = setInterval(run, ms); return { cancel: () => clearInterval(timer) } }
  }
  const ep = new coap.CoapEndpoint({
    send: (bytes, peer) => sent.push({ bytes, peer }),
    timers,
    onRequest: (request, respond) => {
      handled.push(request)
      answer(request, respond)
    },
    limits: { maxBody },
    transmission: () => ({ ackTimeoutMs: 20, ackRandomFactor: 1.5, maxRetransmit: 2 }),
    counters: { malformed: counter('malformed'), duplicate: counter('duplicate'), retransmitted: counter('retransmitted'), tooLarge: counter('tooLarge') }
  })
  t.teardown(() => ep.close())
  return { sent, endpoint: ep, handled, counts }
}

const PEER = { address: '127.0.0.1', port: 5000 }
const request = (messageId: number, type: coap.CoapType, options: coap.CoapOption[] = [], payload = Buffer.alloc(0), method: number = CODE.PUT): Buffer =>
  coap.serialize({ type, code: method, messageId, token: hex('beef'), options: [{ number: OPTION.URI_PATH, value: Buffer.from('r') }, ...options], payload })

t.test('endpoint: a duplicate CON is answered again, handled once; a duplicate NON is dropped', async (t) => {
  const w = endpoint(t)
  w.endpoint.receive(request(42, TYPE.CON), PEER)
  w.endpoint.receive(request(42, TYPE.CON), PEER)
  t.equal(w.handled.length, 1)
  t.equal(w.sent.length, 2)
  t.same(w.sent[0].bytes, w.sent[1].bytes, 'the same ACK again')
  t.match(coap.parse(w.sent[0].bytes), { type: TYPE.ACK, code: CODE.CHANGED, messageId: 42, token: hex('beef') })
  w.endpoint.receive(request(42, TYPE.CON), { ...PEER, port: 5001 })
  t.equal(w.handled.length, 2, 'the same id from another peer is another message')
  w.endpoint.receive(request(43, TYPE.NON), PEER)
  w.endpoint.receive(request(43, TYPE.NON), PEER)
  t.equal(w.handled.length, 3)
  t.match(coap.parse(w.sent.at(-1)!.bytes), { type: TYPE.NON, code: CODE.CHANGED, token: hex('beef') }, 'a NON answered by a NON')
  t.equal(w.counts.duplicate, 2)

  // RFC 7967 No-Response: 2 suppresses the 2.xx answer (a CON still gets an empty ACK)
  const sentBefore = w.sent.length
  w.endpoint.receive(request(44, TYPE.NON, [{ number: OPTION.NO_RESPONSE, value: coap.uintOption(2) }]), PEER)
  t.equal(w.sent.length, sentBefore, 'no answer to the NON')
  w.endpoint.receive(request(45, TYPE.CON, [{ number: OPTION.NO_RESPONSE, value: coap.uintOption(2) }]), PEER)
  t.match(coap.parse(w.sent.at(-1)!.bytes), { type: TYPE.ACK, code: CODE.EMPTY, messageId: 45 })
  w.endpoint.receive(request(46, TYPE.NON, [{ number: OPTION.NO_RESPONSE, value: coap.uintOption(2) }, { number: 2049, value: Buffer.alloc(0) }]), PEER)
  t.match(coap.parse(w.sent.at(-1)!.bytes), { type: TYPE.NON, code: CODE.BAD_OPTION }, 'a 4.xx still comes')
})

t.test('endpoint: malformed datagrams, a ping, an unknown critical option', async (t) => {
  const w = endpoint(t)
  w.endpoint.receive(hex('40 01 00 09 ff'), PEER)
  t.match(coap.parse(w.sent[0].bytes), { type: TYPE.RST, messageId: 9 }, 'a CON with a readable header: RST')
  w.endpoint.receive(hex('50 01 00 0a ff'), PEER)
  w.endpoint.receive(hex('01'), PEER)
  t.equal(w.sent.length, 1, 'a NON or an unreadable header: dropped silently')
  t.equal(w.counts.malformed, 3)
  w.endpoint.receive(hex('40 00 00 0b'), PEER)
  t.match(coap.parse(w.sent[1].bytes), { type: TYPE.RST, messageId: 11 }, 'CoAP ping → RST')
  w.endpoint.receive(request(12, TYPE.CON, [{ number: 2049, value: Buffer.alloc(0) }]), PEER)
  t.match(coap.parse(w.sent[2].bytes), { type: TYPE.ACK, code: CODE.BAD_OPTION })
  t.equal(w.handled.length, 0)
})

t.test('endpoint: a request whose time runs out while its CON is still retransmitted fails to its caller, nothing unhandled', async (t) => {
  const w = endpoint(t)
  const unhandled: unknown[] = []
  const onUnhandled = (reason: unknown): void => { unhandled.push(reason) }
  process.on('unhandledRejection', onUnhandled)
  t.teardown(() => { process.off('unhandledRejection', onUnhandled) })
  // the CON is retransmitted for at least 20 + 40 + 80 ms; the request gives up after 30
  await t.rejects(w.endpoint.request(PEER, { code: CODE.GET }, 30), { message: 'no response within 30 ms' })
  await new Promise((resolve) => setImmediate(resolve))
  t.same(unhandled, [], 'no unhandled rejection (the node would have stopped)')
})

t.test('endpoint: CON retransmission with back-off until ACK, RST or MAX_RETRANSMIT', async (t) => {
  const w = endpoint(t)
  const timedOut = await w.endpoint.send(PEER, { type: TYPE.CON, code: CODE.CONTENT, token: hex('01'), payload: Buffer.from('n') })
  t.same(timedOut, { kind: 'timeout' })
  t.equal(w.sent.length, 3, 'sent once, retransmitted MAX_RETRANSMIT (2) times')
  const ids = new Set(w.sent.map((s) => coap.parse(s.bytes).messageId))
  t.equal(ids.size, 1, 'with the same message id')
  t.equal(w.counts.retransmitted, 2)

  // NSTART 1: the second CON waits for the first's ACK
  const first = w.endpoint.send(PEER, { type: TYPE.CON, code: CODE.CONTENT, payload: Buffer.from('a') })
  const second = w.endpoint.send(PEER, { type: TYPE.CON, code: CODE.CONTENT, payload: Buffer.from('b') })
  await new Promise((resolve) => setImmediate(resolve))
  const out = coap.parse(w.sent.at(-1)!.bytes)
  t.equal(out.payload.toString(), 'a')
  w.endpoint.receive(coap.serialize({ type: TYPE.ACK, code: CODE.EMPTY, messageId: out.messageId, token: Buffer.alloc(0), options: [], payload: Buffer.alloc(0) }), PEER)
  t.match(await first, { kind: 'ack' })
  await new Promise((resolve) => setImmediate(resolve))
  const next = coap.parse(w.sent.at(-1)!.bytes)
  t.equal(next.payload.toString(), 'b', 'the second goes once the first was acknowledged')
  w.endpoint.receive(coap.serialize({ type: TYPE.RST, code: CODE.EMPTY, messageId: next.messageId, token: Buffer.alloc(0), options: [], payload: Buffer.alloc(0) }), PEER)
  t.same(await second, { kind: 'reset' })
  t.equal(w.endpoint.state.outstanding, 0)
})

t.test('endpoint: Block1 put together, Block2 sliced and served to follow-ups', async (t) => {
  const body = Buffer.from('0123456789'.repeat(10))
  const w = endpoint(t, (req, respond) => respond(req.method === CODE.GET ? { code: CODE.CONTENT, payload: body } : { code: CODE.CHANGED, payload: `got ${req.payload.length}` }), 120)
  const block1 = (mid: number, num: number, more: boolean, payload: Uint8Array): void =>
    w.endpoint.receive(request(mid, TYPE.CON, [{ number: OPTION.BLOCK1, value: coap.blockOption({ num, more, szx: 1 }) }], Buffer.from(payload)), PEER)
  block1(1, 0, true, body.subarray(0, 32))
  const cont = coap.parse(w.sent[0].bytes)
  t.match(cont, { code: CODE.CONTINUE })
  t.same(coap.readBlock(coap.option(cont, OPTION.BLOCK1)!), { num: 0, more: true, szx: 1 })
  block1(2, 1, true, body.subarray(32, 64))
  block1(3, 2, true, body.subarray(64, 96))
  block1(4, 3, false, body.subarray(96))
  t.equal(w.handled.length, 1, 'the handler saw one request')
  t.same(w.handled[0].payload, body)
  const last = coap.parse(w.sent[3].bytes)
  t.match(last, { code: CODE.CHANGED, payload: Buffer.from('got 100') })
  t.same(coap.readBlock(coap.option(last, OPTION.BLOCK1)!), { num: 3, more: false, szx: 1 }, 'the final answer carries the last Block1')
  block1(5, 5, true, body.subarray(0, 32))
  t.match(coap.parse(w.sent[4].bytes), { code: CODE.REQUEST_ENTITY_INCOMPLETE })
  for (let num = 0; num < 4; num++) block1(6 + num, num, true, body.subarray(0, 32))
  t.match(coap.parse(w.sent.at(-1)!.bytes), { code: CODE.REQUEST_ENTITY_TOO_LARGE })
  t.equal(coap.uint(coap.parse(w.sent.at(-1)!.bytes), OPTION.SIZE1), 120, '4.13 says the limit in Size1')
  w.endpoint.receive(request(20, TYPE.CON, [], Buffer.alloc(121)), PEER)
  t.match(coap.parse(w.sent.at(-1)!.bytes), { code: CODE.REQUEST_ENTITY_TOO_LARGE }, 'one datagram over the limit')
  t.equal(w.counts.tooLarge, 2)

  // a GET asking for 32-byte blocks: block 0 (Size2, ETag), then the follow-ups from the kept representation
  const get = (mid: number, num: number): coap.CoapMessage => {
    w.endpoint.receive(request(mid, TYPE.CON, [{ number: OPTION.BLOCK2, value: coap.blockOption({ num, more: false, szx: 1 }) }], Buffer.alloc(0), CODE.GET), PEER)
    return coap.parse(w.sent.at(-1)!.bytes)
  }
  const handledBefore = w.handled.length
  const parts: Buffer[] = []
  const etags = new Set<string>()
  for (let num = 0; ; num++) {
    const answer = get(30 + num, num)
    const block = coap.readBlock(coap.option(answer, OPTION.BLOCK2)!)!
    t.equal(block.num, num)
    if (num === 0) t.equal(coap.uint(answer, OPTION.SIZE2), 100)
    etags.add(coap.option(answer, OPTION.ETAG)!.toString('hex'))
    parts.push(answer.payload)
    if (!block.more) break
  }
  t.same(Buffer.concat(parts), body)
  t.equal(etags.size, 1, 'one ETag for every block of the representation')
  t.equal(w.handled.length, handledBefore + 1, 'the follow-ups are answered from the kept representation')

  // the endpoint's own message over one block: block 0 goes, the rest awaits the peer's GETs
  const sending = w.endpoint.send(PEER, { type: TYPE.NON, code: CODE.CONTENT, token: hex('77'), payload: Buffer.alloc(3000, 7) }, { szx: 6, block2Key: 'notification-key', observe: () => 9 })
  t.same(await sending, { kind: 'sent' })
  const first = coap.parse(w.sent.at(-1)!.bytes)
  t.equal(first.payload.length, 1024)
  t.equal(coap.uint(first, OPTION.OBSERVE), 9)
  t.same(coap.readBlock(coap.option(first, OPTION.BLOCK2)!), { num: 0, more: true, szx: 6 })
})

t.test('endpoint as a client: request() gets the piggybacked answer of another endpoint, a separate one, and fails on RST', async (t) => {
  const server = endpoint(t, (req, respond) => respond({ code: CODE.CONTENT, payload: `you asked ${req.path.join('/')}` }))
  const client = endpoint(t)
  const SERVER = { address: '127.0.0.1', port: 5683 }
  const CLIENT = { address: '127.0.0.1', port: 40000 }
  // wire them: what one sends, the other receives
  let delivered = 0
  const pump = (): void => {
    for (; delivered < client.sent.length; delivered++) server.endpoint.receive(client.sent[delivered].bytes, CLIENT)
  }
  const asking = client.endpoint.request(SERVER, { code: CODE.GET, options: [{ number: OPTION.URI_PATH, value: Buffer.from('3') }, { number: OPTION.URI_PATH, value: Buffer.from('0') }] })
  await new Promise((resolve) => setImmediate(resolve))
  pump()
  client.endpoint.receive(server.sent[0].bytes, SERVER)
  const answer = await asking
  t.match(answer, { type: TYPE.ACK, code: CODE.CONTENT })
  t.equal(answer.payload.toString(), 'you asked 3/0')

  // an empty ACK first, the answer later in a CON of its own (which the client ACKs)
  const separate = client.endpoint.request(SERVER, { code: CODE.GET })
  await new Promise((resolve) => setImmediate(resolve))
  const sent = coap.parse(client.sent.at(-1)!.bytes)
  client.endpoint.receive(coap.serialize({ type: TYPE.ACK, code: CODE.EMPTY, messageId: sent.messageId, token: Buffer.alloc(0), options: [], payload: Buffer.alloc(0) }), SERVER)
  client.endpoint.receive(coap.serialize({ type: TYPE.CON, code: CODE.CONTENT, messageId: 7, token: sent.token, options: [], payload: Buffer.from('later') }), SERVER)
  t.equal((await separate).payload.toString(), 'later')
  t.match(coap.parse(client.sent.at(-1)!.bytes), { type: TYPE.ACK, code: CODE.EMPTY, messageId: 7 }, 'the separate answer ACKed')

  const refused = client.endpoint.request(SERVER, { code: CODE.GET })
  await new Promise((resolve) => setImmediate(resolve))
  const third = coap.parse(client.sent.at(-1)!.bytes)
  client.endpoint.receive(coap.serialize({ type: TYPE.RST, code: CODE.EMPTY, messageId: third.messageId, token: Buffer.alloc(0), options: [], payload: Buffer.alloc(0) }), SERVER)
  await t.rejects(refused, /reset/)
})
