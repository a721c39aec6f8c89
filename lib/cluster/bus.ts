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
// A frame is taken when Redis has handed it to every node on the bus: PUBLISH
// answers how many subscribers got it, and each node hears the others' `hello`
// (every BEHIND_RENEW_MS). A frame Redis refused (connection lost, failover)
// or that reached fewer nodes than this one hears (one of them is
// resubscribing after a reconnect) is sent again; receivers drop a frame they
// saw already (sender, sequence). A node not heard for PEER_TTL_MS while this
// one listens is gone (its loss holds the bus that long at most); after this
// node's own (re)subscribe every known node gets RECONNECT_GRACE_MS.
import { randomBytes } from 'node:crypto'
import { createRequire } from 'node:module'
import type { Redis } from 'ioredis'
import type mqemitter from 'mqemitter'
import { decodeFrame, decodeMessage, encodeFrame, encodeMessage, type FrameKind } from './bus-frame.js'

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
const RECONNECT_GRACE_MS = 4000
const ANSWERS_PER_TURN = 256
/** Frames remembered per sender to drop a resent copy. */
const SEEN_PER_SENDER = 4096
/** Senders remembered (a node's sender changes at every start). */
const SENDERS = 256

const noop = (): void => {}

export class RedisBus extends MQEmitter {
  readonly #options: BusOptions
  readonly #tag = randomBytes(8)
  readonly #tagHex = this.#tag.toString('hex')
  #sequence = 0
  #frame: Buffer[] = []
  #frameDones: Done[] = []
  #frameBytes = 0
  #flushScheduled = false
  #outstanding = 0
  #held: Done[] = []
  #answers: Array<() => void> = []
  #answersHead = 0
  #dropped = 0
  #reportedBehind = false
  readonly #remoteBehind = new Map<string, number>()
  /** the other nodes on the bus: when each was last heard */
  readonly #peers = new Map<string, number>()
  /** since when this node's subscriber connection has been listening (a node is gone only after this long without a word) */
  #listeningSince = Date.now()
  readonly #seen = new Map<string, Set<number>>()
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
    this.#subscribed = options.sub.subscribe(options.channel).then(() => { this.#listeningSince = Date.now() }, noop)
    // ioredis subscribes again after a reconnect
    options.sub.on('ready', () => { this.#listeningSince = Date.now() })
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
      this.#enqueue(encodeMessage(packet), settle)
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
      queued: this.length,
      held: this.#held.length,
      dropped: this.#dropped,
      behindNodes: this.#remoteBehind.size,
      behind: this.behind()
    }
  }

  #enqueue (message: Buffer, done: Done): void {
    this.#frame.push(message)
    this.#frameDones.push(done)
    this.#frameBytes += message.length
    this.#outstanding++
    if (this.#frame.length >= FRAME_MESSAGES || this.#frameBytes >= FRAME_BYTES) this.#flush()
    else if (!this.#flushScheduled) {
      this.#flushScheduled = true
      setImmediate(() => this.#flush())
    }
  }

  #flush (): void {
    this.#flushScheduled = false
    if (this.#frame.length === 0) return
    const frame = encodeFrame('messages', this.#tag, ++this.#sequence, this.#frame)
    const dones = this.#frameDones
    this.#frame = []
    this.#frameDones = []
    this.#frameBytes = 0
    this.#send(frame, dones)
  }

  #send (frame: Buffer, dones: Done[]): void {
    this.#options.pub.publish(this.#options.channel, frame).then((receivers) => {
      if (receivers < this.#needed() && !this.closed) {
        setTimeout(() => this.#send(frame, dones), RETRY_MS).unref()
        return
      }
      this.#outstanding -= dones.length
      for (const done of dones) done()
      this.#release()
    }, (err: Error) => {
      if (!this.closed) {
        setTimeout(() => this.#send(frame, dones), RETRY_MS).unref()
        return
      }
      this.#outstanding -= dones.length
      for (const done of dones) done(err)
    })
  }

  /** Subscribers a frame must reach: every node heard (or not yet given up on), and this one while it listens. */
  #needed (): number {
    const now = Date.now()
    const judging = now - this.#listeningSince >= RECONNECT_GRACE_MS
    let alive = 0
    for (const [peer, heard] of this.#peers) {
      if (!judging || now - heard < PEER_TTL_MS) alive++
      else this.#peers.delete(peer)
    }
    return alive + (this.#options.sub.status === 'ready' ? 1 : 0)
  }

  #control (kind: FrameKind): void {
    this.#options.pub.publish(this.#options.channel, encodeFrame(kind, this.#tag, 0)).catch(noop)
  }

  #receive (data: Buffer): void {
    const frame = decodeFrame(data)
    if (frame === null || frame.sender === this.#tagHex || this.closed) return
    if (frame.kind === 'bye') {
      this.#peers.delete(frame.sender)
      this.#remoteBehind.delete(frame.sender)
      this.#release()
      return
    }
    this.#peers.set(frame.sender, Date.now())
    if (frame.kind === 'hello') return
    if (frame.kind === 'behind') {
      this.#remoteBehind.set(frame.sender, Date.now() + BEHIND_TTL_MS)
      return
    }
    if (frame.kind === 'resumed') {
      this.#remoteBehind.delete(frame.sender)
      this.#release()
      return
    }
    if (this.#seenBefore(frame.sender, frame.sequence)) return
    for (const encoded of frame.messages) {
      let packet: Record<string, unknown>
      try {
        packet = decodeMessage(encoded)
      } catch {
        continue
      }
      if (typeof packet?.topic !== 'string') continue
      if (this._matcher.match(packet.topic).length > 0) super.emit(packet as BusPacket, () => this.#afterDelivery())
    }
    this.#checkQueue()
  }

  #seenBefore (sender: string, sequence: number): boolean {
    let seen = this.#seen.get(sender)
    if (seen === undefined) {
      seen = new Set()
      this.#seen.set(sender, seen)
    }
    if (seen.has(sequence)) return true
    if (seen.size === 0 && this.#seen.size > SENDERS) this.#seen.delete(this.#seen.keys().next().value as string)
    seen.add(sequence)
    if (seen.size > SEEN_PER_SENDER) seen.delete(seen.values().next().value as number)
    return false
  }

  #afterDelivery (): void {
    if (this.#reportedBehind) this.#checkQueue()
    else if (this.#held.length > 0) this.#release()
  }

  /** Says so when this node's delivery queue passes the window, and again when it is down to half. */
  #checkQueue (): void {
    const queued = this.length
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
    this.#release()
  }
}
