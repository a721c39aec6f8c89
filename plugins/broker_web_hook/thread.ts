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
// the requests a lane writes in one turn of the loop go out in one write (the
// socket is corked for the turn): the system calls, not the JavaScript, are
// most of what a POST costs. A 5xx answer or no answer is retried after a
// growing pause, at most `retryTimes` times; then the event is given up.
// While one of its events waits for a retry a lane starts no new ones, so a
// retried event can come after no more of its client's events than were
// already under way. Each settled event is taken off the shared count
// (`shared`: events and bytes waiting or under way, which the node checks
// before it hands one over), and the outcomes go back to the node in batches.
//
// `deliveryThread` runs on a worker thread of its own, so writing requests and
// reading answers never takes the event loop that serves MQTT. It is started
// there from its source text (Function.prototype.toString, see delivery.ts):
// it must be self-contained, reaching nothing outside its parameters (type
// imports are erased and fine).
import type { Socket } from 'node:net'
import type { buildConnector, Client, Dispatcher } from 'undici'
import type { PayloadEncoding } from './payload.js'

/** A message.publish event as the node hands it over: the thread writes its JSON body. */
export interface PublishFields {
  from: string | null
  username: string | null
  topic: string
  qos: number
  retain: boolean
  payload: Buffer
  /** ms */
  ts: number
}

/** What the node sends the thread. */
export type ToThread =
  /**
   * events to post: the same index in `keys`, `sizes`, `bodies` is one event; an empty body is the
   * next of `messages` (message.publish), its payload in `payloads` up to the next of `ends`
   */
  | { type: 'events', keys: string[], sizes: number[], bodies: string[], messages: Array<Omit<PublishFields, 'payload'>>, ends: number[], payloads: ArrayBuffer }

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

/** Runs the delivery on `port`; answers a function that stops it (requests under way end, waiting events are forgotten). */
export function deliveryThread (
  port: ThreadPort, settings: ThreadSettings, undici: { Client: typeof Client, buildConnector: typeof buildConnector },
  encodePayload: (payload: Buffer, encoding: PayloadEncoding) => string
): () => Promise<void> {
  interface Item { key: string, size: number, body: string }
  interface Lane {
    items: Item[]
    /** events placed here and not settled: waiting or under way */
    load: number
    head: number
    /** POSTs started and not settled: under way or waiting for a retry */
    busy: number
    /** of those, the ones waiting for a retry or retried: while there are any, no new event starts */
    retrying: number
    /** events under way at most: 1 until the endpoint accepts one and after a failure, then `pipelining` */
    window: number
    client: Client | undefined
    socket: Socket | undefined
    corked: boolean
  }
  const url = new URL(settings.url)
  const path = `${url.pathname}${url.search}`
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  for (const [name, value] of Object.entries(settings.headers)) headers[name.toLowerCase()] = value
  const { ca, cert, key, verify } = settings.tls
  const connect = undici.buildConnector({ timeout: settings.timeout, ca, cert, key, rejectUnauthorized: verify })
  const pipelining = settings.pipelining
  const batchSize = settings.batchSize
  // undici pipelines only requests marked idempotent and not blocking (a POST answered by no one is retried
  // here anyway: events are posted at least once)
  const idempotent = pipelining > 1
  const blocking = pipelining === 1
  const lanes: Lane[] = Array.from({ length: settings.poolSize }, () => ({ items: [], load: 0, head: 0, busy: 0, retrying: 0, window: 1, client: undefined, socket: undefined, corked: false }))
  /** a lane with this many events waiting or under way takes no client that has none there */
  const laneRoom = pipelining * batchSize
  /** the lane of each client that has events not settled, and how many */
  const placed = new Map<string, { lane: Lane, events: number }>()
  const shared = settings.shared
  const state = { stopped: false, started: 0, outageSince: -1, sent: 0, failed: 0, why: undefined as string | undefined, report: undefined as NodeJS.Timeout | undefined }
  const pauses = new Set<NodeJS.Timeout>()

  /** The lane of a client's next event: the one holding its events not settled, else the first with room and no retry pending, else the least loaded. */
  const laneOf = (key: string): Lane => {
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

  // one connection per lane, made when the lane first posts; its socket is kept to cork it
  const clientOf = (lane: Lane): Client => lane.client ??= new undici.Client(url.origin, {
    pipelining,
    headersTimeout: settings.timeout,
    bodyTimeout: settings.timeout,
    connect: (options, callback) => connect(options, (err, socket) => {
      if (err === null) lane.socket = socket
      callback(err as null, socket as Socket)
    })
  })

  /**
   * Holds the lane's writes until the end of this turn of the loop and the
   * next check phase, so that they go out together: undici writes to an idle
   * keep-alive socket (the lane's state between two batches) from an
   * immediate of its own, queued after this one; an uncork in this turn's
   * immediate came before it, and each request went out in its own write.
   */
  const cork = (lane: Lane): void => {
    const socket = lane.socket
    if (lane.corked || socket === undefined || socket.destroyed) return
    lane.corked = true
    socket.cork()
    setImmediate(() => setImmediate(() => {
      lane.corked = false
      socket.uncork()
    }))
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
  class Attempt implements Dispatcher.DispatchHandler {
    status = 0
    readonly seq = ++state.started
    constructor (readonly lane: Lane, readonly items: Item[], readonly body: string, readonly tries: number, readonly wait: number) {}

    post (): void {
      cork(this.lane)
      try {
        clientOf(this.lane).dispatch({ path, method: 'POST', headers, body: this.body, idempotent, blocking }, this)
      } catch (err) {
        // the client is closed: the thread is stopping
        queueMicrotask(() => this.settled(err instanceof Error ? err : new Error(String(err))))
      }
    }

    // undici takes a handler of this (v7) form only when it has onRequestStart
    onRequestStart (): void {}
    onResponseStart (_controller: Dispatcher.DispatchController, status: number): void { this.status = status }
    // settled after undici's callback returns: starting the lane's next request inside it upsets the client
    onResponseEnd (): void { queueMicrotask(() => this.settled(this.status)) }
    onResponseError (_controller: Dispatcher.DispatchController, error: Error): void { queueMicrotask(() => this.settled(error)) }

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
        lane.window = pipelining
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
        if (!state.stopped) new Attempt(lane, items, this.body, tries + 1, this.wait * settings.retryBackoff).post()
      }, this.wait)
      pauses.add(timer)
    }
  }

  /** A POST settled: its events off the shared count, counted, and the lane's next ones started. */
  const done = (lane: Lane, items: Item[], retried: boolean, ok: boolean, why?: string): void => {
    let bytes = 0
    for (const item of items) {
      bytes += item.size
      const client = placed.get(item.key)
      if (client !== undefined && --client.events === 0) placed.delete(item.key)
    }
    lane.load -= items.length
    Atomics.sub(shared, 0, items.length)
    Atomics.sub(shared, 1, bytes)
    if (ok) state.sent += items.length
    else {
      state.failed += items.length
      state.why ??= why
    }
    // outcomes go back in batches: each message wakes the node's thread
    state.report ??= setTimeout(report, 20)
    lane.busy--
    if (retried) lane.retrying--
    start(lane)
  }

  /** The lane's next waiting event, taken off its queue. */
  const take = (lane: Lane): Item => {
    const item = lane.items[lane.head]
    lane.items[lane.head++] = undefined as unknown as Item
    // drop the consumed front once it is most of the array
    if (lane.head >= 1024 && lane.head * 2 >= lane.items.length) {
      lane.items = lane.items.slice(lane.head)
      lane.head = 0
    }
    return item
  }

  /** Starts the lane's waiting events, as many POSTs as its connection may have under way, each with up to `batchSize` events. */
  const start = (lane: Lane): void => {
    while (!state.stopped && lane.retrying === 0 && lane.busy < lane.window && lane.head < lane.items.length) {
      // a part batch only when the lane has none under way: under load the events that come meanwhile fill the next
      if (batchSize > 1 && lane.busy > 0 && lane.items.length - lane.head < batchSize) return
      lane.busy++
      // the events waiting now, no more than batchSize; one event's body is its object, a batch's an array
      const items: Item[] = []
      while (items.length < batchSize && lane.head < lane.items.length) items.push(take(lane))
      const body = batchSize === 1 ? items[0].body : `[${items.map((item) => item.body).join(',')}]`
      new Attempt(lane, items, body, 0, settings.retryInterval).post()
    }
  }

  port.on('message', (message) => {
    if (state.stopped || message.type !== 'events') return
    const { keys, sizes, bodies, messages, ends, payloads } = message
    const { node, encoding } = settings
    const touched = new Set<Lane>()
    let m = 0
    for (let i = 0; i < keys.length; i++) {
      let body = bodies[i]
      if (body === '') {
        const { from, username, topic, qos, retain, ts } = messages[m]
        const start = m === 0 ? 0 : ends[m - 1]
        const payload = encodePayload(Buffer.from(payloads, start, ends[m++] - start), encoding)
        body = JSON.stringify({ action: 'message_publish', node, from_client_id: from, from_username: username, topic, qos, retain, payload, ts })
      }
      const lane = laneOf(keys[i])
      lane.load++
      lane.items.push({ key: keys[i], size: sizes[i], body })
      touched.add(lane)
    }
    for (const lane of touched) start(lane)
  })

  return async () => {
    state.stopped = true
    clearTimeout(state.report)
    for (const timer of pauses) clearTimeout(timer)
    pauses.clear()
    const clients: Client[] = []
    placed.clear()
    for (const lane of lanes) {
      lane.items = []
      if (lane.client !== undefined) clients.push(lane.client)
    }
    await Promise.all(clients.map(async (client) => await client.destroy()))
  }
}
