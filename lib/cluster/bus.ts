// The engine's message bus in a cluster: Aedes' own mqemitter for this
// node's listeners, and one Redis pub/sub channel `<cluster>:bus` that every
// node subscribes to. A message is delivered to this node's listeners at once
// and batched with the others of the same tick into one binary frame (one
// PUBLISH for many messages, many PUBLISHes pipelined on one connection), so
// throughput is bounded by work, not by round trips.
//
// Backpressure: the bus is behind while this node has `window` messages not
// yet acknowledged by Redis, while its own delivery queue is longer than
// `window` (it then tells the other nodes: a `behind` frame, renewed until it
// catches up), or while another node says it is behind. A publisher's message
// is acknowledged to the engine (which reads the publisher's next packets
// only then: its socket is paused, nothing is buffered beyond what it already
// read) once it is delivered here, acknowledged by Redis and the bus is no
// longer behind. With `overflow = drop_qos0` a QoS 0 message (not $SYS) met
// while behind is delivered here only, and counted as dropped.
// While Redis is unreachable a message does not wait for it: its publisher is
// acknowledged once it is delivered here and its frame is queued (sent when
// Redis is back); `window` of them queued hold the publishers. A frame handed
// to Redis just before the connection was seen lost is such a frame too (ioredis
// would hold it, and its publishers, until it gives up on the command: ~21 s).
// What a node receives is handed to its listeners in order, RECEIVED_PER_TURN
// messages per turn of the event loop at most (one Redis read can hold
// thousands); what waits counts in its delivery queue.
// A frame is taken when Redis has handed it to every node on the bus: PUBLISH
// answers how many subscribers got it, and each node hears the others' `hello`
// (every BEHIND_RENEW_MS). A frame Redis refused (connection lost, failover)
// or that reached fewer nodes than this one hears (one of them is
// resubscribing after a reconnect) is sent again; receivers drop a frame they
// saw already (sender, sequence). A node not heard for PEER_TTL_MS while this
// one listens is absent (its loss holds the bus that long at most); while this
// node's own subscriber connection is down, and for RECONNECT_GRACE_MS after
// it is back, no node is judged absent (nothing could be heard meanwhile).
// Redis handing a frame to a subscriber is not the subscriber having it: a
// Redis killed (a Sentinel failover) loses what it had not yet written to
// the subscribers' sockets. So every message frame is also kept until each
// node says it has it (its receipts ride on its control frames, at most
// RECEIPT_MS after it received a frame), and sent again every RESEND_MS while
// some node does not; more than UNCONFIRMED_WINDOWS × window messages kept so
// holds the publishers. An absent node may only have been slow or cut off from
// Redis for a while (a restart of Redis, a stalled process): its frames are
// kept (not resent) and, when it is heard again (the same sender), sent again
// from the first it has not confirmed. It holds no publisher: when what is kept
// reaches the bound, the absent nodes are given up (they died, or were away so
// long that what they miss is past the bound). A node that says `bye` is given up at once.
import { randomBytes } from 'node:crypto'
import { createRequire } from 'node:module'
import type { Redis } from 'ioredis'
import type mqemitter from 'mqemitter'
import { decodeFrame, decodeMessage, decodeReceipt, encodeFrame, encodeReceipt, FrameBuilder, sentBy, type FrameKind } from './bus-frame.js'

const require = createRequire(import.meta.url)

type Done = (err?: Error) => void
type BusPacket = mqemitter.Message
type Listener = (packet: BusPacket, cb: () => void) => void

interface LocalEmitter extends mqemitter.MQEmitter {
  closed: boolean
  readonly length: number
  _matcher: { match: (topic: string) => unknown[] }
}

const MQEmitter = require('mqemitter') as new (options: object) => LocalEmitter

export type BusOverflow = 'pause' | 'drop_qos0'

export interface BusOptions {
  pub: Redis
  sub: Redis
  channel: string
  /** most messages outstanding (not acknowledged by Redis, or queued for delivery here) before publishers wait */
  window: number
  overflow: BusOverflow
  /** the engine's delivery concurrency (Aedes' `concurrency`) */
  concurrency: number
}

export interface BusState {
  /** messages handed to Redis and not acknowledged */
  outstanding: number
  /** messages in frames some other node has not yet said it received */
  unconfirmed: number
  /** messages waiting for delivery on this node */
  queued: number
  /** publishers' acknowledgements held until the bus catches up */
  held: number
  /** QoS 0 messages kept off the bus (drop_qos0) */
  dropped: number
  /** other nodes that said they are behind */
  behindNodes: number
  /** true while publishers wait */
  behind: boolean
  /** other nodes heard lately (not absent) */
  nodes: number
}

/** Most messages (and bytes) in one frame. */
const FRAME_MESSAGES = 512
const FRAME_BYTES = 256 * 1024
/** How often a behind node says so again, and how long its word holds (a node that died behind stops holding others). */
const BEHIND_RENEW_MS = 250
const BEHIND_TTL_MS = 1000
const RETRY_MS = 250
const PEER_TTL_MS = 1000
/** After this node's own reconnect (a Redis restart, a failover) the others get this long to resubscribe before one counts as gone. */
const RECONNECT_GRACE_MS = 10_000
const ANSWERS_PER_TURN = 256
/**
 * Received messages handed to this node's listeners per turn of the event
 * loop, at most (and at most this many bytes): one Redis read is up to 512
 * messages per frame, several frames, and each delivery writes to sockets.
 */
const RECEIVED_PER_TURN = 256
const RECEIVED_BYTES_PER_TURN = 64 * 1024
/** Frames received out of order remembered per sender (past a gap this wide its sender has given up on it). */
const SEEN_PER_SENDER = 4096
/** How soon a node says which frames it received, and how long a sender waits for that before sending a frame again. */
const RECEIPT_MS = 50
const RESEND_MS = 1000
/** Messages kept for nodes that have not said they received them, in windows, before publishers wait (or absent nodes are given up). */
const UNCONFIRMED_WINDOWS = 4
/** Senders remembered (a node's sender changes at every start). */
const SENDERS = 256

const noop = (): void => {}
const EMPTY = Buffer.alloc(0)

/** A message frame on its way to Redis; `dones` answer its publishers (emptied once they need not wait for Redis). */
interface Sending { frame: Buffer, dones: Done[], count: number }

export class RedisBus extends MQEmitter {
  readonly #options: BusOptions
  readonly #tag = randomBytes(8)
  readonly #tagHex = this.#tag.toString('hex')
  #sequence = 0
  readonly #frame = new FrameBuilder()
  #frameDones: Done[] = []
  #flushScheduled = false
  #outstanding = 0
  #held: Done[] = []
  #answers: Array<() => void> = []
  #answersHead = 0
  #dropped = 0
  #reportedBehind = false
  readonly #remoteBehind = new Map<string, number>()
  /** the other nodes on the bus: when each was last heard (absent ones are in #confirmed only) */
  readonly #peers = new Map<string, number>()
  /** since when this node's subscriber connection has been listening; undefined while it is not (a node is gone only after this long without a word) */
  #listeningSince: number | undefined
  /** this node's message frames some other node has not said it received, by number (ascending) */
  readonly #unconfirmed = new Map<number, { frame: Buffer, messages: number, sentAt: number }>()
  #unconfirmedMessages = 0
  /** per other node, heard or absent: up to which frame number it has every frame of this one */
  readonly #confirmed = new Map<string, number>()
  /** message frames handed to Redis and not yet acknowledged by it */
  readonly #sending = new Set<Sending>()
  /** per sender: every frame up to `upTo` received, and those above it */
  readonly #received = new Map<string, { upTo: number, above: Set<number> }>()
  #receiptScheduled = false
  /** messages received and not yet handed to this node's listeners, in the order they came (from #inboxHead) */
  #inbox: Buffer[] = []
  #inboxHead = 0
  #inboxScheduled = false
  readonly #subscribed: Promise<unknown>
  readonly #timer: NodeJS.Timeout
  /** called for each QoS 0 message kept off the bus by `drop_qos0` (the node counts it as dropped) */
  onDrop: () => void = noop

  constructor (options: BusOptions) {
    super({ concurrency: options.concurrency, matchEmptyLevels: true })
    this.#options = options
    options.sub.on('messageBuffer', (channel: Buffer, data: Buffer) => {
      if (channel.toString() === options.channel) this.#receive(data)
    })
    // no grace at the first subscribe: no node has been heard yet, so none can be judged unheard
    this.#subscribed = options.sub.subscribe(options.channel).then(() => { this.#listeningSince = Date.now() - RECONNECT_GRACE_MS }, noop)
    // ioredis subscribes again after a reconnect
    options.sub.on('ready', () => { this.#listeningSince = Date.now() })
    // a frame on its way when the connection is lost waits here for Redis, not its publishers
    options.pub.on('close', () => { this.#lostPub() })
    options.sub.on('close', () => { this.#listeningSince = undefined })
    this.#timer = setInterval(() => this.#tick(), BEHIND_RENEW_MS).unref()
  }

  /** Listeners are this node's; `done` once the node hears the bus. */
  override on (topic: string, notify: Listener, done?: () => void): this {
    super.on(topic, notify)
    if (done !== undefined) void this.#subscribed.then(() => setImmediate(done))
    return this
  }

  override emit (packet: BusPacket, done: Done = noop): void {
    if (this.closed) {
      super.emit(packet, done)
      return
    }
    const local = this._matcher.match(packet.topic).length > 0
    const drop = this.#options.overflow === 'drop_qos0' && (packet.qos ?? 0) === 0 &&
      !packet.topic.startsWith('$SYS/') && this.behind()
    let waits = (local ? 1 : 0) + (drop ? 0 : 1)
    let failure: Error | undefined
    const settle: Done = (err) => {
      if (err !== undefined && err !== null) failure = err
      if (--waits > 0) return
      // a dropped message's publisher is not held: dropping is the alternative to waiting
      if (failure !== undefined || drop || !this.behind()) this.#answer(failure === undefined ? done : () => done(failure))
      else this.#held.push(done)
    }
    if (drop) {
      this.#dropped++
      this.onDrop()
    } else {
      this.#enqueue(packet, settle)
    }
    if (local) super.emit(packet, (err) => { settle(err); this.#afterDelivery() })
    else if (waits === 0) this.#answer(done)
  }

  override close (cb: () => void = noop): void {
    if (this.closed) {
      super.close(cb)
      return
    }
    clearInterval(this.#timer)
    this.#flush()
    this.#unconfirmed.clear()
    this.#unconfirmedMessages = 0
    // the others stop waiting for this node at once
    this.#control('bye')
    const held = this.#held
    this.#held = []
    for (const done of held) done()
    const { pub, sub } = this.#options
    void Promise.allSettled([sub.quit(), pub.quit()]).then(() => super.close(cb))
    this.closed = true
  }

  /** Publishers wait while this is true. */
  behind (): boolean {
    if (this.#outstanding >= this.#options.window || this.#reportedBehind) return true
    if (this.#unconfirmedMessages >= this.#options.window * UNCONFIRMED_WINDOWS) return true
    if (this.#remoteBehind.size === 0) return false
    const now = Date.now()
    for (const [node, until] of this.#remoteBehind) {
      if (until > now) return true
      this.#remoteBehind.delete(node)
    }
    return false
  }

  state (): BusState {
    return {
      outstanding: this.#outstanding,
      unconfirmed: this.#unconfirmedMessages,
      queued: this.#queued(),
      held: this.#held.length,
      dropped: this.#dropped,
      behindNodes: this.#remoteBehind.size,
      behind: this.behind(),
      nodes: this.#peers.size
    }
  }

  #enqueue (packet: BusPacket, done: Done): void {
    this.#frame.add(packet)
    this.#frameDones.push(done)
    this.#outstanding++
    if (this.#frame.count >= FRAME_MESSAGES || this.#frame.bytes >= FRAME_BYTES) this.#flush()
    else if (!this.#flushScheduled) {
      this.#flushScheduled = true
      setImmediate(() => this.#flush())
    }
  }

  #flush (): void {
    this.#flushScheduled = false
    if (this.#frame.count === 0) return
    const frame = this.#frame.finish('messages', this.#tag, ++this.#sequence)
    const count = this.#frameDones.length
    // Redis unreachable: the frame waits here (it counts in #outstanding), its publishers do not
    const dones = this.#options.pub.status === 'ready' ? this.#frameDones : this.#answerAll(this.#frameDones)
    this.#frameDones = []
    if (this.#confirmed.size > 0) {
      this.#unconfirmed.set(this.#sequence, { frame, messages: count, sentAt: Date.now() })
      this.#unconfirmedMessages += count
      this.#limitAbsent()
    }
    this.#send({ frame, dones, count })
  }

  /** Settles the messages' bus part now; nothing is left to wait for. */
  #answerAll (dones: Done[]): Done[] {
    for (const done of dones) done()
    return []
  }

  #send (sending: Sending): void {
    const { frame, count } = sending
    this.#sending.add(sending)
    this.#options.pub.publish(this.#options.channel, frame).then((receivers) => {
      if (receivers < this.#needed() && !this.closed) {
        setTimeout(() => this.#send(sending), RETRY_MS).unref()
        return
      }
      this.#sending.delete(sending)
      this.#outstanding -= count
      for (const done of sending.dones) done()
      this.#release()
    }, (err: Error) => {
      if (!this.closed) {
        if (this.#options.pub.status !== 'ready') this.#lostPub()
        setTimeout(() => this.#send(sending), RETRY_MS).unref()
        return
      }
      this.#sending.delete(sending)
      this.#outstanding -= count
      for (const done of sending.dones) done(err)
    })
  }

  /** The publishing connection is lost: the frames on their way wait here for Redis (and are sent again), their publishers do not. */
  #lostPub (): void {
    for (const sending of this.#sending) sending.dones = this.#answerAll(sending.dones)
  }

  /** Subscribers a frame must reach: every node heard (or not yet given up on), and this one while it listens. */
  #needed (): number {
    this.#judgePeers()
    return this.#peers.size + (this.#options.sub.status === 'ready' ? 1 : 0)
  }

  /** Counts as absent the nodes not heard for PEER_TTL_MS, once this one has listened long enough to have heard them. */
  #judgePeers (): void {
    const now = Date.now()
    if (this.#listeningSince === undefined || now - this.#listeningSince < RECONNECT_GRACE_MS) return
    let lost = false
    for (const [peer, heard] of this.#peers) {
      if (now - heard < PEER_TTL_MS) continue
      this.#absent(peer)
      lost = true
    }
    if (lost) this.#limitAbsent()
  }

  /** Past the bound of what is kept (or of nodes remembered), gives up the absent nodes, the one furthest behind first, rather than hold publishers for them. */
  #limitAbsent (): void {
    while (this.#unconfirmedMessages >= this.#options.window * UNCONFIRMED_WINDOWS || this.#confirmed.size > SENDERS) {
      let furthest: string | undefined
      for (const [peer, upTo] of this.#confirmed) {
        if (!this.#peers.has(peer) && (furthest === undefined || upTo < (this.#confirmed.get(furthest) ?? 0))) furthest = peer
      }
      if (furthest === undefined) return
      this.#forget(furthest)
    }
  }

  /** A node no longer heard: it holds no frame and no publisher, and what is kept for it stays (#confirmed). */
  #absent (peer: string): void {
    this.#peers.delete(peer)
    this.#remoteBehind.delete(peer)
  }

  /** Gives a node up: what was kept for it goes. */
  #forget (peer: string): void {
    this.#absent(peer)
    this.#confirmed.delete(peer)
    this.#prune()
  }

  /** Lets go of the frames every node has said it received. */
  #prune (): void {
    let low = Infinity
    for (const upTo of this.#confirmed.values()) low = Math.min(low, upTo)
    const before = this.#unconfirmedMessages
    for (const [sequence, kept] of this.#unconfirmed) {
      if (sequence > low) break
      this.#unconfirmed.delete(sequence)
      this.#unconfirmedMessages -= kept.messages
    }
    if (this.#unconfirmedMessages < before) this.#release()
  }

  /**
   * Sends again the frames some node heard has not said it received for
   * RESEND_MS (their copies are dropped by those that had them); an absent
   * node's wait until it is heard again.
   */
  #resend (): void {
    if (this.#unconfirmed.size === 0 || this.#options.pub.status !== 'ready') return
    let low = Infinity
    for (const peer of this.#peers.keys()) low = Math.min(low, this.#confirmed.get(peer) ?? Infinity)
    const now = Date.now()
    for (const [sequence, kept] of this.#unconfirmed) {
      if (sequence <= low || now - kept.sentAt < RESEND_MS) continue
      kept.sentAt = now
      this.#options.pub.publish(this.#options.channel, kept.frame).catch(noop)
    }
  }

  /** A control frame: this node's latest frame number and, but for `bye`, its receipts. */
  #control (kind: FrameKind): void {
    const receipts: Buffer[] = []
    if (kind !== 'bye') {
      for (const [sender, received] of this.#received) {
        if (this.#peers.has(sender)) receipts.push(encodeReceipt(sender, received.upTo))
      }
    }
    this.#options.pub.publish(this.#options.channel, encodeFrame(kind, this.#tag, this.#sequence, receipts)).catch(noop)
  }

  #scheduleReceipts (): void {
    if (this.#receiptScheduled) return
    this.#receiptScheduled = true
    setTimeout(() => {
      this.#receiptScheduled = false
      if (!this.closed) this.#control(this.#reportedBehind ? 'behind' : 'hello')
    }, RECEIPT_MS).unref()
  }

  #receive (data: Buffer): void {
    if (this.closed || sentBy(data, this.#tag)) return
    const frame = decodeFrame(data)
    if (frame === null) return
    if (frame.kind === 'bye') {
      this.#forget(frame.sender)
      this.#release()
      return
    }
    // a node newly heard owes receipts only for the frames sent from now on; an absent one heard again, from where it was
    const known = this.#confirmed.has(frame.sender)
    if (!known) this.#confirmed.set(frame.sender, this.#sequence)
    this.#peers.set(frame.sender, Date.now())
    if (!known) this.#limitAbsent()
    const fresh = this.#receivedFrame(frame.sender, frame.sequence, frame.kind === 'messages')
    if (frame.kind !== 'messages') {
      this.#receipts(frame.sender, frame.messages)
      if (frame.kind === 'behind') this.#remoteBehind.set(frame.sender, Date.now() + BEHIND_TTL_MS)
      if (frame.kind === 'resumed') {
        this.#remoteBehind.delete(frame.sender)
        this.#release()
      }
      return
    }
    if (!fresh) return
    this.#scheduleReceipts()
    for (const encoded of frame.messages) this.#inbox.push(encoded)
    if (!this.#inboxScheduled) {
      this.#inboxScheduled = true
      setImmediate(() => this.#deliverReceived())
    }
    this.#checkQueue()
  }

  /** Hands received messages to this node's listeners in order, RECEIVED_PER_TURN (or RECEIVED_BYTES_PER_TURN) at most per turn. */
  #deliverReceived (): void {
    this.#inboxScheduled = false
    if (this.closed) {
      this.#inbox = []
      this.#inboxHead = 0
      return
    }
    const end = Math.min(this.#inbox.length, this.#inboxHead + RECEIVED_PER_TURN)
    let bytes = 0
    while (this.#inboxHead < end && bytes < RECEIVED_BYTES_PER_TURN) {
      const encoded = this.#inbox[this.#inboxHead]
      this.#inbox[this.#inboxHead++] = EMPTY
      bytes += encoded.length
      let packet: Record<string, unknown>
      try {
        packet = decodeMessage(encoded)
      } catch {
        continue
      }
      if (typeof packet?.topic !== 'string') continue
      if (this._matcher.match(packet.topic).length > 0) super.emit(packet as BusPacket, () => this.#afterDelivery())
    }
    if (this.#inboxHead < this.#inbox.length) {
      this.#inboxScheduled = true
      setImmediate(() => this.#deliverReceived())
    } else {
      this.#inbox = []
      this.#inboxHead = 0
    }
    this.#checkQueue()
  }

  /** Messages waiting for delivery here: received and not yet handed over, and in the engine's queue. */
  #queued (): number {
    return this.length + this.#inbox.length - this.#inboxHead
  }

  /**
   * Notes a frame of `sender`; true for a message frame not received before.
   * A sender first heard by a control frame (which carries its latest frame
   * number) owes this node the frames after it; first heard by a message
   * frame, that frame and those after it.
   */
  #receivedFrame (sender: string, sequence: number, messages: boolean): boolean {
    let received = this.#received.get(sender)
    if (received === undefined) {
      received = { upTo: messages ? sequence - 1 : sequence, above: new Set() }
      this.#received.set(sender, received)
      if (this.#received.size > SENDERS) this.#received.delete(this.#received.keys().next().value as string)
    }
    if (!messages || sequence <= received.upTo || received.above.has(sequence)) return false
    received.above.add(sequence)
    if (received.above.size > SEEN_PER_SENDER) received.upTo = Math.min(...received.above) - 1
    while (received.above.delete(received.upTo + 1)) received.upTo++
    return true
  }

  /** `sender` says up to which frame it has every one of this node's. */
  #receipts (sender: string, entries: Buffer[]): void {
    for (const entry of entries) {
      const receipt = decodeReceipt(entry)
      if (receipt?.sender !== this.#tagHex) continue
      if (receipt.upTo > (this.#confirmed.get(sender) ?? -1)) {
        this.#confirmed.set(sender, receipt.upTo)
        this.#prune()
      }
      return
    }
  }

  #afterDelivery (): void {
    if (this.#reportedBehind) this.#checkQueue()
    else if (this.#held.length > 0) this.#release()
  }

  /** Says so when this node's delivery queue passes the window, and again when it is down to half. */
  #checkQueue (): void {
    const queued = this.#queued()
    if (!this.#reportedBehind && queued >= this.#options.window) {
      this.#reportedBehind = true
      this.#control('behind')
    } else if (this.#reportedBehind && queued <= this.#options.window / 2) {
      this.#reportedBehind = false
      this.#control('resumed')
      this.#release()
    }
  }

  #release (): void {
    if (this.#held.length === 0 || this.behind()) return
    const held = this.#held
    this.#held = []
    for (const done of held) this.#answer(done)
  }

  /**
   * Acknowledges a publisher's message, ANSWERS_PER_TURN at most per turn of
   * the event loop: each answer may let the engine read and handle the
   * publisher's next chunk (thousands of messages) at once, and a frame's
   * acknowledgement answers hundreds of messages.
   */
  #answer (done: () => void): void {
    this.#answers.push(done)
    if (this.#answers.length - this.#answersHead === 1) setImmediate(() => this.#drainAnswers())
  }

  #drainAnswers (): void {
    const end = Math.min(this.#answers.length, this.#answersHead + ANSWERS_PER_TURN)
    while (this.#answersHead < end) {
      const done = this.#answers[this.#answersHead]
      this.#answers[this.#answersHead++] = noop
      done()
    }
    if (this.#answersHead < this.#answers.length) {
      setImmediate(() => this.#drainAnswers())
      return
    }
    this.#answers = []
    this.#answersHead = 0
  }

  #tick (): void {
    this.#control(this.#reportedBehind ? 'behind' : 'hello')
    this.#judgePeers()
    this.#resend()
    this.#release()
  }
}
