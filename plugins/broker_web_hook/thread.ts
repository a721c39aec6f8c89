// The delivery thread: posts the events the node hands it, one POST per
// event (or, with `batchSize` > 1, per up to that many events of one lane, a
// JSON array), over at most `poolSize` keep-alive connections (TLS with the
// web.hook.ssl.* files). One FIFO lane per connection. A client's event goes
// to the lane that holds its events not yet settled, so one client's events
// are posted in order; a client with none goes to the first lane with room
// (fewer than `pipelining` × `batchSize` events), so that at a moderate rate
// every event shares one connection, and one write and one read there, and
// further connections open only as the rate needs them: each connection's
// writes and reads, on both sides, cost more than the requests they carry.
// A lane keeps up to `pipelining` requests under way on its connection
// (HTTP/1.1 pipelining: the endpoint reads them, and answers, in order) once
// the endpoint has accepted one (until then, and after a failure, one), and
// the requests a lane starts in one turn of the loop go out in one write.
// A 5xx answer or no answer is retried after a growing pause, at most `retryTimes` times; then the event is given up.
// While one of its events waits for a retry a lane starts no new ones, so a
// retried event can come after no more of its client's events than were
// already under way. Each settled event is taken off the shared count
// (`shared`: events and bytes waiting or under way, which the node checks
// before it hands one over), and the outcomes go back to the node in batches.
//
// The HTTP/1.1 client is this file's own (`connectionOf` and what follows),
// not a library: a POST here is one request head written from a template and
// one answer framed (status line, then content-length, chunked or
// close-delimited bytes, skipped; a head equal to the last one parsed is
// compared, not parsed again; a run of equal answers with no body, compared
// at once). Each event's whole request (with `batchSize` 1) is written as bytes
// when the event comes, one after the other in a buffer (no string per event:
// a message.publish body from the batch's fields, its payload's JSON string
// written from the bytes (`jsonText`), its start up to the qos
// copied from the batch's earlier message with the same texts; another event's
// body copied), so the requests a connection sends in one turn, events that
// came in order, are mostly one range of that buffer, written as it is. It
// costs the thread 1.0–1.15 µs of CPU per POST at 36 000 POSTs/s (0.7–0.8 at
// 150 000; 0.5–0.6 with a payload with no character to escape) where undici's Client,
// pipelined and corked, cost 6.5–9.0 at 35 000 (bench/README.md, web hook section). What it leaves out, as an endpoint of this plugin does
// not need it: redirects, compression, streamed bodies, HTTP/2.
//
// `deliveryThread` runs on a worker thread of its own, so writing requests and
// reading answers never takes the event loop that serves MQTT. It is started
// there from its source text (Function.prototype.toString, see delivery.ts):
// it must be self-contained, reaching nothing outside its parameters (type
// imports are erased and fine).
import type * as Net from 'node:net'
import type * as Tls from 'node:tls'
import type { PayloadEncoding } from './payload.js'
import type { BatchRecord, readBatch as ReadBatch } from './handover.js'

/** What the node sends the thread. */
export type ToThread =
  /** events to post: `length` bytes of `bytes` written by handover.ts's Batch (transferred) */
  | { type: 'events', bytes: ArrayBuffer, length: number }

/** What the thread tells the node. */
export type FromThread =
  /** events settled since the last report: posted (2xx), given up; `why` of the first given up */
  | { type: 'settled', sent: number, failed: number, why?: string }
  /** an attempt got no answer: the endpoint is unavailable (sent once per outage) */
  | { type: 'down', error: string }
  /** an attempt started during the outage got an answer */
  | { type: 'up' }

export interface ThreadSettings {
  url: string
  headers: Record<string, string>
  tls: { ca?: string, cert?: string, key?: string, verify: boolean }
  poolSize: number
  /** requests under way at once on one connection (1: each waits for the answer to the one before) */
  pipelining: number
  /** events one POST carries at most: 1, the body is the event's object; more, a JSON array of them */
  batchSize: number
  /** ms per attempt: connecting, sending, the whole answer */
  timeout: number
  retryTimes: number
  retryInterval: number
  retryBackoff: number
  /** the node's name and web.hook.encode_payload, in the message.publish bodies */
  node: string
  encoding: PayloadEncoding
  /** [0] events waiting or under way, [1] their bytes; the thread takes each settled event off */
  shared: Int32Array
}

/** The two ends a thread talks through: a worker's parentPort, or one end of a MessageChannel. */
export interface ThreadPort {
  on: (event: 'message', listener: (message: ToThread) => void) => unknown
  postMessage: (message: FromThread) => void
}

/** The modules the thread opens its connections with (a worker requires them itself). */
export interface Sockets { net: typeof Net, tls: typeof Tls }

/**
 * Runs the delivery on `port`; answers a function that stops it (requests under way end, waiting events are forgotten).
 * An event's request (or, in batch mode, its body) is bytes written to a buffer of `bodies`, which it keeps until it
 * settles; those bytes never change once written.
 */
export function deliveryThread (
  port: ThreadPort, settings: ThreadSettings, sockets: Sockets,
  encodePayload: (bytes: Buffer, encoding: PayloadEncoding, start: number, end: number) => string,
  readBatch: typeof ReadBatch
): () => Promise<void> {
  /**
   * `key`: a hash of the client id's bytes (two clients that share one share a lane: still each in order).
   * `bytes[start, end)`: with `batchSize` 1, the whole request (head and body, written when the event came); else its body.
   */
  interface Item { key: number, size: number, bytes: Uint8Array, start: number, end: number }
  /** A POST's events: with `batchSize` 1 its one event (no array made per POST), else an array of them */
  type Events = Item | Item[]
  /** A queue taken from the front: `items` from `head` on */
  interface Fifo<T> { items: T[], head: number }
  /** The lane's events not started yet are its Fifo */
  interface Lane extends Fifo<Item> {
    /** events placed here and not settled: waiting or under way */
    load: number
    /** POSTs started and not settled: under way or waiting for a retry */
    busy: number
    /** of those, the ones waiting for a retry or retried: while there are any, no new event starts */
    retrying: number
    /** events under way at most: 1 until the endpoint accepts one and after a failure, then `pipelining` */
    window: number
    /** the endpoint's last answer here closed its connection: one request at a time */
    closes: boolean
    connection: Connection | undefined
  }
  /** The bytes of an answer still to come after its head. */
  type Framing = 'head' | 'length' | 'chunk-size' | 'chunk' | 'chunk-end' | 'trailers' | 'close'
  /** What an answer's head says: its status, how its body is framed (`none`: it has none), whether the connection closes after it. */
  interface Head { status: number, close: boolean, body: 'none' | 'length' | 'chunked' | 'close', length: number }
  /** One keep-alive connection: the requests written on it and not answered yet, in order, and the answer being read. */
  interface Connection {
    socket: Net.Socket
    /** a turn's requests are under way: written together at its end (`flush`), sent at `turnAt` (ms) */
    turn: boolean
    turnAt: number
    flushNow: () => void
    /**
     * the requests of this turn: while they lie one after the other in one buffer, as events that came in order
     * do, that range of it (written as it is); else `outAt` bytes of `out`, copied there
     */
    range: { bytes: Uint8Array | undefined, start: number, end: number }
    out: Buffer
    outAt: number
    /** requests written and not answered, oldest first */
    unanswered: Fifo<Attempt>
    timer: NodeJS.Timeout | undefined
    ended: boolean
    /** bytes read and not framed yet */
    rest: Buffer | undefined
    framing: Framing
    /** of the answer being read (whether the connection stays open after it: `closes` of its lane) */
    status: number
    /** the bytes of its body, or chunk, still to come */
    left: number
  }
  const url = new URL(settings.url)
  const secure = url.protocol === 'https:'
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
  const portNumber = Number(url.port === '' ? (secure ? 443 : 80) : url.port)
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  for (const [name, value] of Object.entries(settings.headers)) headers[name.toLowerCase()] = value
  let headText = `host: ${url.host}\r\n`
  for (const [name, value] of Object.entries(headers)) headText += `${name}: ${value}\r\n`
  const requestHead = Buffer.from(`POST ${url.pathname}${url.search} HTTP/1.1\r\n${headText}content-length: `, 'utf8')
  /** what a connection's first turn has room for: it grows to what a turn writes */
  const OUT_BYTES = 16 * 1024
  const { ca, cert, key, verify } = settings.tls
  const pipelining = settings.pipelining
  const batchSize = settings.batchSize
  /** an answer's head longer than this is not an HTTP answer this client reads */
  const MAX_HEAD = 64 * 1024
  const lanes: Lane[] = Array.from({ length: settings.poolSize }, () => ({ items: [], load: 0, head: 0, busy: 0, retrying: 0, window: 1, closes: false, connection: undefined }))
  /** a lane with this many events waiting or under way takes no client that has none there */
  const laneRoom = pipelining * batchSize
  /** the lane of each client that has events not settled, and how many */
  const placed = new Map<number, { lane: Lane, events: number }>()
  const shared = settings.shared
  const state = { stopped: false, started: 0, outageSince: -1, sent: 0, failed: 0, why: undefined as string | undefined, report: undefined as NodeJS.Timeout | undefined }
  const pauses = new Set<NodeJS.Timeout>()
  /** the constant parts of a message.publish body, in order around its fields */
  const publishParts = [`{"action":"message_publish","node":${JSON.stringify(settings.node)},"from_client_id":`, ',"from_username":', ',"topic":', ',"qos":',
    ',"retain":true,"payload":', ',"retain":false,"payload":', ',"ts":'].map((text) => Buffer.from(text, 'utf8'))
  const [openBody, toUsername, toTopic, toQos, toPayloadRetained, toPayload, toTs] = publishParts
  /** the bytes of the constant parts a body has: all but one of the two `retain` parts */
  const publishPartsBytes = publishParts.reduce((sum, part) => sum + part.length, 0) - toPayloadRetained.length
  const publishPartsRetained = publishPartsBytes - toPayload.length + toPayloadRetained.length
  /** the digits of the last message.publish's ts: the events of one millisecond share them */
  const lastTs = { ms: -1, digits: Buffer.alloc(24), length: 0 }
  /** events' requests (or bodies) are written one after the other in a buffer of this size, a new one when it is full */
  const BODY_BYTES = 256 * 1024
  const bodies = { bytes: Buffer.allocUnsafeSlow(BODY_BYTES), at: 0 }
  /** the last answer head read in full, with what it says: an endpoint's answers are mostly the same bytes, read again without parsing */
  let lastHead: { bytes: Buffer, head: Head, run: Buffer | undefined } | undefined
  /** of an answer with no body, `run` holds this many copies of its bytes */
  const RUN = 64

  /** The front of a queue, taken off it. */
  const shift = <T>(fifo: Fifo<T>): T => {
    const item = fifo.items[fifo.head]
    fifo.items[fifo.head++] = undefined as unknown as T
    // drop the consumed front once it is most of the array
    if (fifo.head >= 1024 && fifo.head * 2 >= fifo.items.length) {
      fifo.items = fifo.items.slice(fifo.head)
      fifo.head = 0
    }
    return item
  }

  /** The values of a header field, in the lower-cased head of an answer. */
  const valuesOf = (fields: string, name: string): string[] => {
    const values: string[] = []
    for (let at = fields.indexOf(`\r\n${name}:`); at >= 0; at = fields.indexOf(`\r\n${name}:`, at + 2)) {
      const end = fields.indexOf('\r\n', at + 2)
      values.push(fields.slice(at + name.length + 3, end < 0 ? fields.length : end).trim())
    }
    return values
  }

  /** An answer that is not one this client reads: the connection ends (its requests count as unanswered); false. */
  const broken = (lane: Lane, connection: Connection, why: string): false => {
    end(lane, connection, new Error(`not an HTTP/1.1 answer: ${why}`))
    return false
  }

  /** The lane of a client's next event: the one holding its events not settled, else the first with room and no retry pending, else the least loaded. */
  const laneOf = (key: number): Lane => {
    const known = placed.get(key)
    if (known !== undefined) {
      known.events++
      return known.lane
    }
    let lane = lanes[0]
    for (const candidate of lanes) {
      if (candidate.load < laneRoom && candidate.retrying === 0) {
        lane = candidate
        break
      }
      if (candidate.load < lane.load) lane = candidate
    }
    placed.set(key, { lane, events: 1 })
    return lane
  }

  /** The lane's connection, opened when the lane first posts and again after one ended. */
  const connectionOf = (lane: Lane): Connection => {
    if (lane.connection !== undefined) return lane.connection
    const socket = secure
      ? sockets.tls.connect({ host: hostname, port: portNumber, ca, cert, key, rejectUnauthorized: verify, servername: sockets.net.isIP(hostname) === 0 ? hostname : undefined, ALPNProtocols: ['http/1.1'] })
      : sockets.net.connect({ host: hostname, port: portNumber })
    socket.setNoDelay(true)
    socket.setKeepAlive(true, 60_000)
    const connection: Connection = {
      socket, turn: false, turnAt: 0, flushNow: () => flush(connection), range: { bytes: undefined, start: 0, end: 0 }, out: Buffer.allocUnsafeSlow(OUT_BYTES), outAt: 0,
      unanswered: { items: [], head: 0 }, timer: undefined, ended: false, rest: undefined, framing: 'head', status: 0, left: 0
    }
    lane.connection = connection
    socket.on('data', (data: Buffer) => read(lane, connection, data))
    socket.on('error', (err) => end(lane, connection, err))
    socket.on('close', () => {
      // an answer delimited by the close is whole now
      if (connection.framing === 'close' && !connection.ended) whole(lane, connection)
      else end(lane, connection, new Error('the endpoint closed the connection'))
    })
    return connection
  }

  /** Ends a connection: the requests on it that got no answer fail with `why`. */
  const end = (lane: Lane, connection: Connection, why: Error): void => {
    if (connection.ended) return
    connection.ended = true
    if (lane.connection === connection) lane.connection = undefined
    clearTimeout(connection.timer)
    connection.socket.destroy()
    const { items, head } = connection.unanswered
    connection.unanswered = { items: [], head: 0 }
    for (const attempt of items.slice(head)) attempt.settled(why)
  }

  /** Fails the connection when its oldest request has waited `timeout` ms for its whole answer. */
  const watch = (lane: Lane, connection: Connection): void => {
    connection.timer = undefined
    const { items, head } = connection.unanswered
    if (connection.ended || head >= items.length) return
    const waited = Date.now() - items[head].sentAt
    if (waited >= settings.timeout) return end(lane, connection, new Error(`no whole answer within ${settings.timeout} ms`))
    connection.timer = setTimeout(watch, settings.timeout - waited, lane, connection)
  }

  /** The answer being read is whole: the oldest request on the connection has it. */
  const answered = (connection: Connection): void => {
    connection.framing = 'head'
    shift(connection.unanswered).settled(connection.status)
  }

  /**
   * An answer with its body read. When the endpoint said it closes the
   * connection after it, the requests written after that one were never read:
   * they go again at once on a new connection, before any the answer lets the
   * lane start (not a failure, not a try), and the lane sends one at a time
   * while the endpoint keeps closing; false then.
   */
  const whole = (lane: Lane, connection: Connection): boolean => {
    if (!lane.closes) {
      answered(connection)
      return true
    }
    if (lane.connection === connection) lane.connection = undefined
    const { items, head } = connection.unanswered
    const unread = items.splice(head + 1)
    for (const attempt of unread) attempt.post()
    answered(connection)
    end(lane, connection, new Error('the endpoint closed the connection'))
    return false
  }

  /** Frames the answers in the bytes read; one that is not HTTP/1.x, or comes unasked, ends the connection. */
  const read = (lane: Lane, connection: Connection, bytes: Buffer): void => {
    const data = connection.rest === undefined ? bytes : Buffer.concat([connection.rest, bytes])
    connection.rest = undefined
    let at = 0
    const fail = (why: string): void => { broken(lane, connection, why) }
    while (at < data.length && !connection.ended) {
      const framing = connection.framing
      if (framing === 'length' || framing === 'chunk') {
        const taken = Math.min(connection.left, data.length - at)
        at += taken
        connection.left -= taken
        if (connection.left > 0) break
        if (framing === 'chunk') connection.framing = 'chunk-end'
        else whole(lane, connection)
        continue
      }
      if (framing === 'close') return
      const known = lastHead
      if (framing === 'head' && known !== undefined) {
        const size = known.bytes.length
        // answers with no body, back to back (a fast endpoint's to pipelined requests): up to RUN of them compared at once
        const run = known.run
        const count = run === undefined ? 0 : Math.min(RUN, Math.floor((data.length - at) / size), connection.unanswered.items.length - connection.unanswered.head)
        if (run !== undefined && count > 1 && data.compare(run, 0, count * size, at, at + count * size) === 0) {
          for (let i = 0; i < count; i++) {
            at += size
            if (!answer(lane, connection, known.head)) return
          }
          continue
        }
        if (data.length - at >= size && data.compare(known.bytes, 0, size, at, at + size) === 0) {
          at += size
          if (!answer(lane, connection, known.head)) return
          continue
        }
      }
      if (framing === 'trailers' && data[at] === 0x0d && data[at + 1] === 0x0a) {
        // no trailer fields: the empty line alone
        at += 2
        whole(lane, connection)
        continue
      }
      const lineEnd = framing === 'head' || framing === 'trailers' ? data.indexOf('\r\n\r\n', at, 'latin1') : data.indexOf('\r\n', at, 'latin1')
      if (lineEnd < 0) {
        if (data.length - at > MAX_HEAD) return fail('a head or line too long')
        break
      }
      const text = data.toString('latin1', at, lineEnd)
      const from = at
      at = lineEnd + (framing === 'head' || framing === 'trailers' ? 4 : 2)
      if (framing === 'chunk-end') {
        if (text !== '') return fail('no CRLF after a chunk')
        connection.framing = 'chunk-size'
      } else if (framing === 'chunk-size') {
        const size = /^[0-9a-f]{1,8}(?=[ \t;]|$)/i.exec(text)
        if (size === null) return fail(`bad chunk size "${text.slice(0, 40)}"`)
        connection.left = parseInt(size[0], 16)
        connection.framing = connection.left === 0 ? 'trailers' : 'chunk'
      } else if (framing === 'trailers') whole(lane, connection)
      else {
        const head = headOf(text)
        if (typeof head === 'string') return fail(head)
        const bytes = Buffer.from(data.subarray(from, at))
        lastHead = { bytes, head, run: head.body === 'none' ? Buffer.concat(Array.from({ length: RUN }, () => bytes)) : undefined }
        if (!answer(lane, connection, head)) return
      }
    }
    if (at < data.length && !connection.ended) connection.rest = Buffer.from(data.subarray(at))
    if (!connection.ended && connection.unanswered.head >= connection.unanswered.items.length) {
      clearTimeout(connection.timer)
      connection.timer = undefined
    }
  }

  /** What an answer's status line and headers say, or why they are not an answer this client reads. */
  const headOf = (text: string): Head | string => {
    const status = /^HTTP\/1\.([01]) ([1-5]\d\d)(?: |$)/.exec(text)
    if (status === null) return `status line "${text.slice(0, 40).split('\r\n')[0]}"`
    const code = Number(status[2])
    // 101: this client asked for no upgrade
    if (code === 101) return '101 to a POST'
    // the three fields that frame the answer; the others are not read
    const fields = text.toLowerCase()
    let length = -1
    for (const value of valuesOf(fields, 'content-length')) {
      if (!/^\d{1,15}$/.test(value) || (length >= 0 && Number(value) !== length)) return `content-length "${value.slice(0, 40)}"`
      length = Number(value)
    }
    const chunked = valuesOf(fields, 'transfer-encoding').join(',').split(',').at(-1)?.trim() === 'chunked'
    const options = valuesOf(fields, 'connection').join(',').split(',').map((option) => option.trim())
    // HTTP/1.1 keeps the connection unless told not to; 1.0 closes it unless told to keep it
    const close = options.includes('close') || (status[1] === '0' && !options.includes('keep-alive'))
    if (code === 204 || code === 304 || (!chunked && length === 0)) return { status: code, close, body: 'none', length: 0 }
    if (chunked) return { status: code, close, body: 'chunked', length: 0 }
    if (length > 0) return { status: code, close, body: 'length', length }
    return { status: code, close: true, body: 'close', length: 0 }
  }

  /** An answer's head read: sets how its body is framed; false when the connection ended on it. */
  const answer = (lane: Lane, connection: Connection, head: Head): boolean => {
    if (connection.unanswered.head >= connection.unanswered.items.length) return broken(lane, connection, 'an answer to no request')
    // 1xx: an interim answer, the final one follows
    if (head.status < 200) return true
    connection.status = head.status
    lane.closes = head.close
    if (head.body === 'none') return whole(lane, connection)
    if (head.body === 'chunked') connection.framing = 'chunk-size'
    else if (head.body === 'length') {
      connection.framing = 'length'
      connection.left = head.length
    } else connection.framing = 'close'
    return true
  }

  const report = (): void => {
    state.report = undefined
    if (state.stopped || (state.sent === 0 && state.failed === 0)) return
    port.postMessage({ type: 'settled', sent: state.sent, failed: state.failed, why: state.why })
    state.sent = 0
    state.failed = 0
    state.why = undefined
  }

  /** One POST (one event, or up to `batchSize` of one lane in order): its lane, its tries so far and the pause before the next. */
  class Attempt {
    readonly seq = ++state.started
    sentAt = 0
    constructor (readonly lane: Lane, readonly items: Events, readonly tries: number, readonly wait: number) {}

    /** Writes the request at the end of this turn, with the others the lane starts in it. */
    post (): void {
      const connection = connectionOf(this.lane)
      if (!connection.turn) {
        connection.turn = true
        connection.turnAt = Date.now()
        queueMicrotask(connection.flushNow)
      }
      this.sentAt = connection.turnAt
      connection.unanswered.items.push(this)
      connection.timer ??= setTimeout(watch, settings.timeout, this.lane, connection)
      append(connection, this.items)
    }

    settled (answer: number | Error): void {
      if (state.stopped) return
      const { lane, items, tries } = this
      if (answer instanceof Error) {
        if (state.outageSince < 0) {
          state.outageSince = this.seq
          port.postMessage({ type: 'down', error: answer.message })
        }
      } else if (state.outageSince >= 0 && this.seq > state.outageSince) {
        state.outageSince = -1
        port.postMessage({ type: 'up' })
      }
      if (typeof answer === 'number' && answer >= 200 && answer < 300) {
        lane.window = lane.closes ? 1 : pipelining
        return done(lane, items, tries > 0, true)
      }
      const retryable = answer instanceof Error || answer >= 500
      // an endpoint that is down or failing is probed with one request at a time
      if (retryable) lane.window = 1
      if (!retryable || tries >= settings.retryTimes) {
        const why = answer instanceof Error ? `no answer: ${answer.message}` : `answer ${answer}`
        return done(lane, items, tries > 0, false, `${why} (${tries + 1} attempt${tries === 0 ? '' : 's'})`)
      }
      if (tries === 0) lane.retrying++
      const timer = setTimeout(() => {
        pauses.delete(timer)
        if (!state.stopped) new Attempt(lane, items, tries + 1, this.wait * settings.retryBackoff).post()
      }, this.wait)
      pauses.add(timer)
    }
  }

  /** Adds a request to the bytes the connection writes at the end of this turn: one event's (written whole), or a batch's array of bodies. */
  const append = (connection: Connection, items: Events): void => {
    if (!Array.isArray(items)) return place(connection, items)
    // the head copied, the length's digits and the blank line written a byte at a time: no string made for the request
    let length = items.length + 1
    for (const item of items) length += item.end - item.start
    const out = room(connection, requestHead.length + 20 + length)
    let at = writeHead(length, out, connection.outAt)
    out[at++] = 0x5b
    for (let i = 0; i < items.length; i++) {
      if (i > 0) out[at++] = 0x2c
      at = copy(items[i].bytes, items[i].start, items[i].end, out, at)
    }
    out[at++] = 0x5d
    connection.outAt = at
  }

  /** A whole request for this turn: it extends the turn's range when it follows it in the same buffer, else it is copied to `out` (the range first). */
  const place = (connection: Connection, item: Item): void => {
    const range = connection.range
    if (connection.outAt === 0) {
      if (range.bytes === undefined) {
        range.bytes = item.bytes
        range.start = item.start
        range.end = item.end
        return
      }
      if (range.bytes === item.bytes && range.end === item.start) {
        range.end = item.end
        return
      }
      const out = room(connection, range.end - range.start)
      connection.outAt = copy(range.bytes, range.start, range.end, out, 0)
      range.bytes = undefined
    }
    const out = room(connection, item.end - item.start)
    connection.outAt = copy(item.bytes, item.start, item.end, out, connection.outAt)
  }

  /** Writes a request's head, for a body of `length` bytes, at `at`; answers where the body goes. */
  const writeHead = (length: number, out: Uint8Array, at: number): number => {
    out.set(requestHead, at)
    at = decimal(length, out, at + requestHead.length)
    out[at] = out[at + 2] = 0x0d
    out[at + 1] = out[at + 3] = 0x0a
    return at + 4
  }

  /** Writes the decimal digits of a whole number ≥ 0 at `at`; answers where they end. */
  const decimal = (value: number, out: Uint8Array, at: number): number => {
    let digits = 1
    for (let rest = value; rest >= 10; rest = Math.floor(rest / 10)) digits++
    for (let i = digits - 1, rest = value; i >= 0; i--, rest = Math.floor(rest / 10)) out[at + i] = 0x30 + rest % 10
    return at + digits
  }

  /** The connection's buffer for this turn's requests, with room for `bytes` more. */
  const room = (connection: Connection, bytes: number): Buffer => {
    const { out, outAt } = connection
    if (out.length - outAt >= bytes) return out
    const bigger = Buffer.allocUnsafeSlow(Math.max(out.length * 2, outAt + bytes))
    out.copy(bigger, 0, 0, outAt)
    connection.out = bigger
    return bigger
  }

  const flush = (connection: Connection): void => {
    const { out, outAt, socket, range } = connection
    const whole = range.bytes
    connection.turn = false
    connection.outAt = 0
    range.bytes = undefined
    if (connection.ended) return
    // the turn's requests as they lie in their buffer (its bytes never change: new requests go after them, or to another)
    if (whole !== undefined) return void socket.write(whole.subarray(range.start, range.end))
    socket.write(out.subarray(0, outAt))
    // the bytes are the socket's until written: the next turn writes in a new buffer unless they went out at once
    if (secure || socket.writableLength > 0) connection.out = Buffer.allocUnsafeSlow(out.length)
  }

  /** A POST settled: its events off the shared count, counted, and the lane's next ones started. */
  const done = (lane: Lane, items: Events, retried: boolean, ok: boolean, why?: string): void => {
    let bytes = 0
    let count = 1
    if (!Array.isArray(items)) bytes = release(items)
    else {
      count = items.length
      for (const item of items) bytes += release(item)
    }
    lane.load -= count
    Atomics.sub(shared, 0, count)
    Atomics.sub(shared, 1, bytes)
    if (ok) state.sent += count
    else {
      state.failed += count
      state.why ??= why
    }
    // outcomes go back in batches: each message wakes the node's thread
    state.report ??= setTimeout(report, 20)
    lane.busy--
    if (retried) lane.retrying--
    start(lane)
  }


  /** The events a batch POST carries: those waiting now, no more than batchSize. */
  const batchOf = (lane: Lane): Item[] => {
    const items: Item[] = []
    while (items.length < batchSize && lane.head < lane.items.length) items.push(shift(lane))
    return items
  }

  /** A settled event off its client's count (the client leaves its lane with its last one); answers its size. */
  const release = (item: Item): number => {
    const client = placed.get(item.key)
    if (client !== undefined && --client.events === 0) placed.delete(item.key)
    return item.size
  }

  /** Starts the lane's waiting events, as many POSTs as its connection may have under way, each with up to `batchSize` events. */
  const start = (lane: Lane): void => {
    while (!state.stopped && lane.retrying === 0 && lane.busy < lane.window && lane.head < lane.items.length) {
      // a part batch only when the lane has none under way: under load the events that come meanwhile fill the next
      if (batchSize > 1 && lane.busy > 0 && lane.items.length - lane.head < batchSize) return
      lane.busy++
      new Attempt(lane, batchSize === 1 ? shift(lane) : batchOf(lane), 0, settings.retryInterval).post()
    }
  }

  /** Copies `bytes[start, end)` to `out` at `at`; answers where the copy ends. */
  const copy = (bytes: Uint8Array, start: number, end: number, out: Uint8Array, at: number): number => {
    // a short field (an id, a topic) is copied a byte at a time: cheaper than the view a set() of part of a buffer needs
    if (end - start > 64) out.set(bytes.subarray(start, end), at)
    else for (let i = start; i < end; i++) out[at + i - start] = bytes[i]
    return at + end - start
  }

  /** Copies all of `bytes` to `out` at `at` (a constant part: no view made); answers where the copy ends. */
  const put = (bytes: Uint8Array, out: Uint8Array, at: number): number => {
    out.set(bytes, at)
    return at + bytes.length
  }

  /**
   * The text of a JSON string (without its quotes) for bytes read as UTF-8, as `JSON.stringify(buffer.toString())`
   * writes it, written at `out[at]` (or only measured, without `out`); answers where it ends. Quotes, backslashes and
   * control characters are escaped; a byte that starts no valid UTF-8 sequence, or a sequence cut short, is U+FFFD, as the
   * decoder makes it (the WHATWG rule: the longest start of a valid sequence is one U+FFFD, the next byte is read
   * again). No string is made: a payload of JSON text, with its quotes, goes as bytes.
   */
  const jsonText = (bytes: Uint8Array, start: number, end: number, out: Uint8Array | undefined, at: number): number => {
    let i = start
    while (i < end) {
      const b = bytes[i]
      if (b < 0x80) {
        // a run of printable ASCII with no quote or backslash: as it is
        let run = i
        while (run < end && bytes[run] >= 0x20 && bytes[run] < 0x80 && bytes[run] !== 0x22 && bytes[run] !== 0x5c) run++
        if (run > i) {
          at = out === undefined ? at + run - i : copy(bytes, i, run, out, at)
          i = run
          continue
        }
        const short = b === 0x22 || b === 0x5c ? b : b === 0x08 ? 0x62 : b === 0x0c ? 0x66 : b === 0x0a ? 0x6e : b === 0x0d ? 0x72 : b === 0x09 ? 0x74 : 0
        if (out !== undefined) {
          out[at] = 0x5c
          if (short !== 0) out[at + 1] = short
          else {
            out[at + 1] = 0x75
            out[at + 2] = out[at + 3] = 0x30
            out[at + 4] = b < 0x10 ? 0x30 : 0x31
            out[at + 5] = HEX[b & 0x0f]
          }
        }
        at += short !== 0 ? 2 : 6
        i++
        continue
      }
      // a sequence of 2 to 4 bytes: its lead byte says how many follow and the range of the first of them
      const follow = b >= 0xc2 && b <= 0xdf ? 1 : b >= 0xe0 && b <= 0xef ? 2 : b >= 0xf0 && b <= 0xf4 ? 3 : 0
      let low = b === 0xe0 ? 0xa0 : b === 0xf0 ? 0x90 : 0x80
      let high = b === 0xed ? 0x9f : b === 0xf4 ? 0x8f : 0xbf
      let next = i + 1
      for (let k = 0; k < follow && next < end && bytes[next] >= low && bytes[next] <= high; k++, next++) {
        low = 0x80
        high = 0xbf
      }
      if (follow > 0 && next - i === follow + 1) at = out === undefined ? at + next - i : copy(bytes, i, next, out, at)
      else {
        if (out !== undefined) {
          out[at] = 0xef
          out[at + 1] = 0xbf
          out[at + 2] = 0xbd
        }
        at += 3
      }
      i = next
    }
    return at
  }

  /** the lower-case hex digits, as JSON.stringify writes `\u00XX` */
  const HEX = Buffer.from('0123456789abcdef', 'latin1')

  /** Room for `bytes` more in `bodies`: a new buffer when the one in use is full (those written stay as they are). */
  const bodyRoom = (bytes: number): Uint8Array => {
    if (bodies.bytes.length - bodies.at < bytes) {
      bodies.bytes = Buffer.allocUnsafeSlow(Math.max(BODY_BYTES, bytes))
      bodies.at = 0
    }
    return bodies.bytes
  }

  /** The digits of `ts` in `lastTs` (the events of one millisecond share them). */
  const tsDigits = (ts: number): number => {
    if (ts !== lastTs.ms) {
      lastTs.ms = ts
      lastTs.length = decimal(ts, lastTs.digits, 0)
    }
    return lastTs.length
  }

  /**
   * An event's bytes in `bodies`, from its record in the batch: with `batchSize` 1 its whole request, else its body.
   * A message.publish body is written from its fields, its length known first; another event's is copied.
   */
  const itemOf = (bytes: Buffer, r: BatchRecord, key: number): Item => {
    const whole = batchSize === 1
    if (r.kind === 0) {
      const length = r.bodyEnd - r.bodyStart
      const out = bodyRoom(length + requestHead.length + 24)
      const start = bodies.at
      const at = whole ? writeHead(length, out, start) : start
      bodies.at = copy(bytes, r.bodyStart, r.bodyEnd, out, at)
      return { key, size: r.size, bytes: out, start, end: bodies.at }
    }
    const { encoding } = settings
    const raw = encoding === 'none'
    // base64/base62: a string, ASCII; else the payload's own bytes as JSON text
    const text = raw ? '' : `"${encodePayload(bytes, encoding, r.payloadStart, r.payloadEnd)}"`
    const payloadLength = raw ? jsonText(bytes, r.payloadStart, r.payloadEnd, undefined, 0) + 2 : text.length
    const length = (r.retain ? publishPartsRetained : publishPartsBytes) + r.keyEnd - r.keyStart + r.userEnd - r.userStart + r.topicEnd - r.topicStart +
      1 + payloadLength + tsDigits(r.ts) + 1
    const out = bodyRoom(length + requestHead.length + 24)
    const start = bodies.at
    const prefixStart = whole ? writeHead(length, out, start) : start
    let at: number
    if (r.kind === 2) {
      // the same texts as an earlier message of this batch: the body's start up to its qos, copied from that one's
      const n = r.publish
      const from = prefixes.bytes[n]
      // within one buffer (the usual case) no view is made
      if (from === out) {
        out.copyWithin(prefixStart, prefixes.start[n], prefixes.end[n])
        at = prefixStart + prefixes.end[n] - prefixes.start[n]
      } else at = copy(from, prefixes.start[n], prefixes.end[n], out, prefixStart)
    } else {
      at = put(openBody, out, prefixStart)
      at = copy(bytes, r.keyStart, r.keyEnd, out, at)
      at = put(toUsername, out, at)
      at = copy(bytes, r.userStart, r.userEnd, out, at)
      at = put(toTopic, out, at)
      at = copy(bytes, r.topicStart, r.topicEnd, out, at)
      at = put(toQos, out, at)
      prefixes.bytes[r.publish] = out
      prefixes.start[r.publish] = prefixStart
      prefixes.end[r.publish] = at
      prefixes.keys[r.publish] = key
    }
    out[at++] = 0x30 + r.qos
    at = put(r.retain ? toPayloadRetained : toPayload, out, at)
    if (raw) {
      out[at++] = 0x22
      at = jsonText(bytes, r.payloadStart, r.payloadEnd, out, at)
      out[at++] = 0x22
    } else at += bodies.bytes.write(text, at, 'latin1')
    at = put(toTs, out, at)
    at = copy(lastTs.digits, 0, lastTs.length, out, at)
    out[at++] = 0x7d
    bodies.at = at
    return { key, size: r.size, bytes: out, start, end: at }
  }

  /**
   * Of each message.publish of the batch being read with its texts written (kind 1, by number), where its body's
   * start up to the qos lies and its key: a kind 2 record's are the same.
   */
  const prefixes = { bytes: [] as Uint8Array[], start: [] as number[], end: [] as number[], keys: [] as number[] }

  /** A hash of a client id's JSON text: FNV-1a. */
  const keyOf = (bytes: Uint8Array, start: number, end: number): number => {
    let hash = 0x811c9dc5
    for (let i = start; i < end; i++) hash = Math.imul(hash ^ bytes[i], 0x01000193)
    return hash
  }

  port.on('message', (message) => {
    if (state.stopped || message.type !== 'events') return
    const bytes = Buffer.from(message.bytes, 0, message.length)
    const touched = new Set<Lane>()
    prefixes.bytes.length = prefixes.start.length = prefixes.end.length = prefixes.keys.length = 0
    readBatch(bytes, message.length, (r) => {
      const key = r.kind === 2 ? prefixes.keys[r.publish] : keyOf(bytes, r.keyStart, r.keyEnd)
      const lane = laneOf(key)
      lane.load++
      lane.items.push(itemOf(bytes, r, key))
      touched.add(lane)
    })
    for (const lane of touched) start(lane)
  })

  return async () => {
    state.stopped = true
    clearTimeout(state.report)
    for (const timer of pauses) clearTimeout(timer)
    pauses.clear()
    placed.clear()
    for (const lane of lanes) {
      lane.items = []
      if (lane.connection !== undefined) end(lane, lane.connection, new Error('stopped'))
    }
  }
}
