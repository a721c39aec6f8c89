// One STOMP connection: frames in, frames out, and its client's link to the
// engine (the kit's GatewayClient). CONNECT opens the link with the STOMP
// login as the MQTT user name (the auth chain decides); SEND publishes at
// QoS 1, so the engine's PUBACK says whether the ACL let it through;
// SUBSCRIBE / UNSUBSCRIBE go to the engine; MESSAGE frames come from the
// engine's messages (subscriptions.ts); BEGIN / COMMIT / ABORT hold frames
// (transactions.ts). An ERROR frame says why and closes the connection.
import { randomBytes } from 'node:crypto'
import type { Socket } from 'node:net'
import { GatewayClient, GatewayLinkClosed, HeldBytes, plainAddress, validTopicFilter, validTopicName, type GatewayClose, type GatewayLink, type GatewayMessage, type PluginContext, type PluginCounter, type PluginTimer } from '../../lib/plugin-kit/index.js'
import { FrameError, FrameParser, serialize, type StompFrame } from './frame.js'
import { negotiate, replyHeader, startHeartbeat, type Heartbeat } from './heartbeat.js'
import { frameLimits, type StompConfig } from './settings.js'
import { ACK_MODES, Subscriptions, type AckMode, type Subscription } from './subscriptions.js'
import { Transactions } from './transactions.js'

export const VERSIONS: readonly string[] = Object.freeze(['1.0', '1.1', '1.2'])
export const PROTOCOL = 'stomp:tcp'
export const LISTENER_ID = 'stomp:tcp:default'
/** a connection that has sent no CONNECT within this is closed (EMQ X's idle_timeout) */
export const CONNECT_TIMEOUT_MS = 15_000
/** after an ERROR or DISCONNECT, the socket is destroyed if the client has not closed it within this */
export const CLOSE_GRACE_MS = 5000
/** SENDs awaiting the engine's answer beyond which the socket is no longer read */
const BACKLOG_HIGH = 256
const BACKLOG_LOW = 64
/** headers of a SEND that are STOMP's own, not carried with the message */
const SEND_OWN_HEADERS: readonly string[] = Object.freeze(['destination', 'content-length', 'transaction', 'receipt'])
/** headers of a MESSAGE the node writes itself */
const MESSAGE_OWN_HEADERS: readonly string[] = Object.freeze(['subscription', 'message-id', 'destination', 'ack', 'content-length', 'content-type'])

export interface StompCounters {
  received: PluginCounter
  sent: PluginCounter
  malformed: PluginCounter
  tooLarge: PluginCounter
}

/** The listener's connection counts (its row of the listeners API). */
export interface ListenerCounts { current: number, closed: number, kicked: number }

export interface SessionDeps {
  ctx: PluginContext<StompConfig>
  counters: StompCounters
  listener: ListenerCounts
  /** CONNECTED's `server` header */
  server: string
}

type State = 'waiting' | 'connecting' | 'connected' | 'closing' | 'closed'

/** Why the engine closed a link, as the ERROR frame says it. */
const CLOSED_BECAUSE: Readonly<Record<string, string>> = Object.freeze({
  administrative_action: 'kicked by the administrator',
  session_taken_over: 'the session was taken over by another connection with this client id',
  server_shutting_down: 'the server is shutting down',
  use_another_server: 'the server is draining: connect to another one',
  server_moved: 'the server has moved',
  keepalive_timeout: 'keep-alive timeout'
})

export class StompSession {
  readonly #socket: Socket
  readonly #ctx: PluginContext<StompConfig>
  readonly #deps: SessionDeps
  readonly #parser: FrameParser
  readonly #subscriptions = new Subscriptions()
  readonly #transactions: Transactions
  #state: State = 'waiting'
  #version = '1.0'
  #link: GatewayLink | undefined
  #client: GatewayClient | undefined
  /** frames after CONNECT, while the link connects */
  #early: StompFrame[] = []
  /** engine answers awaited (SEND, SUBSCRIBE, UNSUBSCRIBE) and what waits for none to be left (DISCONNECT) */
  #pending = 0
  #whenSettled: Array<() => void> = []
  #lastRead = Date.now()
  #lastWritten = Date.now()
  /** bytes read and written before the link existed, added to the node's byte counts once it does */
  readonly #bytes = new HeldBytes()
  #connectTimer: PluginTimer | undefined
  #graceTimer: PluginTimer | undefined
  #heartbeat: { stop: () => void } | undefined
  #readPaused = false
  /** DISCONNECT came: frames after it are not read, the receipt waits for the engine's answers */
  #disconnecting = false

  constructor (socket: Socket, deps: SessionDeps) {
    this.#socket = socket
    this.#ctx = deps.ctx
    this.#deps = deps
    this.#parser = new FrameParser(() => frameLimits(this.#ctx.config), (frame) => this.#frame(frame), () => {})
    this.#transactions = new Transactions(this.#ctx.timers, () => this.#ctx.config['stomp.frame.max_body_length'])
    deps.listener.current++
    socket.setNoDelay(true)
    socket.on('data', (chunk: Buffer) => this.#data(chunk))
    socket.on('error', () => {})
    socket.once('close', () => this.#closed())
    this.#connectTimer = this.#ctx.timers.setTimeout(() => {
      if (this.#state === 'waiting') this.#fail('no CONNECT', `no CONNECT frame within ${CONNECT_TIMEOUT_MS / 1000} s`)
    }, CONNECT_TIMEOUT_MS)
  }

  // ---- bytes in, frames out -------------------------------------------------

  #data (chunk: Buffer): void {
    this.#lastRead = Date.now()
    this.#countBytes(chunk.length, 0)
    if (this.#state === 'closing' || this.#state === 'closed') return
    try {
      this.#parser.push(chunk)
    } catch (err) {
      if (!(err instanceof FrameError)) {
        this.#ctx.logger.error({ err }, 'STOMP frame handling failed')
        this.#fail('internal error', 'the frame could not be handled')
        return
      }
      if (err.kind === 'too_large') this.#deps.counters.tooLarge.inc()
      else this.#deps.counters.malformed.inc()
      this.#fail(err.kind === 'too_large' ? 'frame too large' : 'malformed frame', err.message)
    }
  }

  #countBytes (read: number, written: number): void {
    this.#bytes.count(this.#link, read, written)
  }

  /** Writes a frame; false when the socket's buffer is full. */
  #write (command: string, headers: Array<[string, string]>, body?: Buffer): boolean {
    if (this.#socket.destroyed || this.#socket.writableEnded) return true
    const bytes = serialize(command, headers, body, this.#version)
    this.#deps.counters.sent.inc()
    this.#lastWritten = Date.now()
    this.#countBytes(0, bytes.length)
    return this.#socket.write(bytes)
  }

  #receipt (frame: StompFrame): void {
    const receipt = frame.headers.get('receipt')
    if (receipt !== undefined) this.#write('RECEIPT', [['receipt-id', receipt]])
  }

  /** Sends an ERROR frame (`message` header, `detail` body) and closes the connection. */
  #fail (message: string, detail: string, frame?: StompFrame): void {
    if (this.#state === 'closing' || this.#state === 'closed') return
    const headers: Array<[string, string]> = [['message', message], ['content-type', 'text/plain']]
    const receipt = frame?.headers.get('receipt')
    if (receipt !== undefined) headers.push(['receipt-id', receipt])
    this.#write('ERROR', headers, Buffer.from(detail))
    this.#close()
  }

  /** Stops reading, lets the engine know (a normal DISCONNECT), ends the socket and destroys it if the client does not close it. */
  #close (): void {
    if (this.#state === 'closing' || this.#state === 'closed') return
    this.#state = 'closing'
    this.#stopTimers()
    this.#client?.disconnect()
    this.#socket.end()
    this.#graceTimer = this.#ctx.timers.setTimeout(() => this.#socket.destroy(), CLOSE_GRACE_MS)
  }

  #closed (): void {
    const wasConnected = this.#state !== 'closed'
    // closing: the link got its DISCONNECT already (#close), and the engine ends it
    const dropped = this.#state !== 'closing'
    this.#state = 'closed'
    this.#stopTimers()
    this.#graceTimer?.cancel()
    this.#transactions.clear()
    // a connection dropped without DISCONNECT: the engine sees it drop too
    if (dropped) this.#client?.destroy()
    if (wasConnected) {
      this.#deps.listener.current--
      this.#deps.listener.closed++
    }
  }

  #stopTimers (): void {
    this.#connectTimer?.cancel()
    this.#connectTimer = undefined
    this.#heartbeat?.stop()
    this.#heartbeat = undefined
  }

  // ---- frames ---------------------------------------------------------------

  #frame (frame: StompFrame): void {
    this.#deps.counters.received.inc()
    switch (this.#state) {
      case 'waiting':
        if (frame.command === 'CONNECT' || frame.command === 'STOMP') this.#connect(frame)
        else this.#fail('not connected', `${frame.command} before CONNECT`, frame)
        return
      case 'connecting':
        this.#early.push(frame)
        return
      case 'connected':
        if (!this.#disconnecting) this.#connected(frame)
        return
      default:
    }
  }

  #connected (frame: StompFrame): void {
    const transaction = frame.headers.get('transaction')
    switch (frame.command) {
      case 'SEND': case 'ACK': case 'NACK':
        if (transaction === undefined) {
          this.#act(frame)
          return
        }
        this.#inTransaction(transaction, frame)
        return
      case 'SUBSCRIBE':
        this.#subscribe(frame)
        return
      case 'UNSUBSCRIBE':
        this.#unsubscribe(frame)
        return
      case 'BEGIN': case 'COMMIT': case 'ABORT':
        this.#transaction(frame)
        return
      case 'DISCONNECT':
        this.#disconnect(frame)
        return
      default:
        this.#fail('already connected', `${frame.command} on a connected session`, frame)
    }
  }

  /** SEND, ACK or NACK, now or at COMMIT. */
  #act (frame: StompFrame): void {
    if (frame.command === 'SEND') this.#send(frame)
    else this.#ack(frame, frame.command === 'NACK')
  }

  // ---- CONNECT --------------------------------------------------------------

  #connect (frame: StompFrame): void {
    const version = negotiateVersion(frame.headers.get('accept-version'))
    if (version === undefined) {
      this.#write('ERROR', [['version', VERSIONS.join(',')], ['content-type', 'text/plain'], ['message', 'unsupported protocol version']],
        Buffer.from(`Supported protocol versions are ${VERSIONS.join(',')}`))
      this.#close()
      return
    }
    this.#version = version
    this.#parser.version = version
    const heartbeat = version === '1.0' ? { send: 0, expect: 0 } : negotiate(frame.headers.get('heart-beat'))
    if (typeof heartbeat === 'string') {
      this.#fail('malformed heart-beat', heartbeat, frame)
      return
    }
    const config = this.#ctx.config
    const login = frame.headers.get('login')
    if ((login === undefined || login === '') && !config['stomp.allow_anonymous']) {
      this.#fail('login refused', 'a login is required (anonymous access is off)', frame)
      return
    }
    const requested = frame.headers.get('client-id')
    const clientId = requested !== undefined && requested !== '' ? requested : `stomp-${randomBytes(12).toString('base64url')}`
    this.#state = 'connecting'
    this.#connectTimer?.cancel()
    // frames after CONNECT wait (in #early) for the engine's answer: no more are read meanwhile
    this.#socket.pause()
    this.#openLink(clientId, login === '' ? undefined : login, frame.headers.get('passcode'), heartbeat, frame)
  }

  #openLink (clientId: string, login: string | undefined, passcode: string | undefined, heartbeat: Heartbeat, frame: StompFrame): void {
    const socket = this.#socket
    const link = this.#ctx.gateway.connect({
      protocol: PROTOCOL,
      listener: LISTENER_ID,
      ipAddress: plainAddress(socket.remoteAddress),
      port: socket.remotePort ?? 0,
      protoName: 'STOMP',
      protoVer: this.#version
    })
    this.#link = link
    this.#bytes.flushTo(link)
    const client = new GatewayClient(link, this.#ctx.timers, {
      onMessage: (message, ack) => this.#message(message, ack),
      onClose: (close) => this.#linkClosed(close)
    })
    this.#client = client
    // the engine's keep-alive follows the client's heart-beat (the listings show it)
    const keepalive = Math.min(0xffff, Math.ceil(heartbeat.expect / 1000))
    client.connect({ clientId, username: login, password: passcode, keepalive }).then((connack) => {
      if (this.#state !== 'connecting') return
      if (connack.reasonCode !== 0) {
        this.#fail('login refused', refusalText(connack.reason), frame)
        return
      }
      this.#state = 'connected'
      this.#socket.resume()
      this.#write('CONNECTED', [
        ['version', this.#version],
        ['heart-beat', replyHeader(heartbeat)],
        ['server', this.#deps.server],
        ['session', clientId]
      ])
      this.#heartbeat = startHeartbeat(this.#ctx.timers, heartbeat, {
        idleSince: () => ({ read: this.#lastRead, written: this.#lastWritten }),
        beat: () => {
          this.#lastWritten = Date.now()
          this.#countBytes(0, 1)
          this.#socket.write('\n')
        },
        dead: () => {
          this.#ctx.logger.debug({ clientId }, 'STOMP heart-beat timeout')
          this.#fail('heart-beat timeout', `nothing received for ${heartbeat.expect * 2} ms`)
        }
      })
      for (const early of this.#early.splice(0)) {
        if (this.#state !== 'connected' || this.#disconnecting) break
        this.#connected(early)
      }
    }, () => {
      // the link closed before its CONNACK (the node is stopping): #linkClosed says so
    })
  }

  /** The engine closed the link: a kick, a takeover, the node stopping … */
  #linkClosed (close: GatewayClose): void {
    if (this.#state === 'closing' || this.#state === 'closed') return
    if (this.#state === 'connecting') {
      // a refusing CONNACK, or the node stopping before it answered
      this.#fail('login refused', close.reason === 'closed' ? 'the connection to the broker closed before it answered' : refusalText(close.reason))
      return
    }
    if (close.reason === 'administrative_action') this.#deps.listener.kicked++
    this.#client = undefined
    this.#fail('disconnected', CLOSED_BECAUSE[close.reason] ?? `the connection to the broker closed (${close.reason})`)
  }

  // ---- SEND -----------------------------------------------------------------

  #send (frame: StompFrame): void {
    const topic = frame.headers.get('destination')
    if (topic === undefined || !validTopicName(topic) || tooLong(topic)) {
      this.#fail('invalid destination', topic === undefined ? 'SEND without a destination header' : `${JSON.stringify(topic)} is not a valid MQTT topic name`, frame)
      return
    }
    const userProperties: Record<string, string> = {}
    for (const [name, value] of frame.headers) if (!SEND_OWN_HEADERS.includes(name)) userProperties[name] = value
    this.#awaitEngine(this.#client!.publish({ topic, payload: frame.body, qos: 1, userProperties }), (code) => {
      if (code >= 0x80) this.#fail('publish refused', code === 0x87 ? `not authorized to publish to ${topic}` : `the message to ${topic} was refused (reason code 0x${code.toString(16)})`, frame)
      else this.#receipt(frame)
    })
  }

  /** Counts an engine answer awaited; the socket is not read while too many are. */
  #awaitEngine<T> (answer: Promise<T>, then: (value: T) => void): void {
    this.#pending++
    if (!this.#readPaused && (this.#client?.backlog ?? 0) > BACKLOG_HIGH) {
      this.#readPaused = true
      this.#socket.pause()
    }
    answer.then((value) => {
      if (this.#state === 'connected' || this.#state === 'connecting') then(value)
    }, (err: Error) => {
      // the link closed: #linkClosed tells the client; anything else is this frame's fault
      if (!(err instanceof GatewayLinkClosed)) this.#fail('refused', err.message)
    }).finally(() => {
      this.#pending--
      if (this.#readPaused && (this.#client?.backlog ?? 0) < BACKLOG_LOW) {
        this.#readPaused = false
        this.#socket.resume()
      }
      if (this.#pending === 0) for (const run of this.#whenSettled.splice(0)) run()
    }).catch((err: Error) => this.#ctx.logger.error({ err }, 'STOMP answer handling failed'))
  }

  // ---- SUBSCRIBE / UNSUBSCRIBE ---------------------------------------------

  #subscribe (frame: StompFrame): void {
    const destination = frame.headers.get('destination')
    if (destination === undefined || !validTopicFilter(destination) || tooLong(destination)) {
      this.#fail('invalid destination', destination === undefined ? 'SUBSCRIBE without a destination header' : `${JSON.stringify(destination)} is not a valid MQTT topic filter`, frame)
      return
    }
    // 1.0 may leave the id out: the destination names the subscription
    const id = frame.headers.get('id') ?? (this.#version === '1.0' ? destination : undefined)
    if (id === undefined) {
      this.#fail('missing id', 'SUBSCRIBE without an id header', frame)
      return
    }
    const ack = frame.headers.get('ack') ?? 'auto'
    if (!ACK_MODES.includes(ack)) {
      this.#fail('invalid ack', `ack ${JSON.stringify(ack)} is not auto, client or client-individual`, frame)
      return
    }
    const existing = this.#subscriptions.get(id)
    if (existing !== undefined) {
      if (existing.destination === destination) this.#receipt(frame)
      else this.#fail('subscription id in use', `subscription id ${id} is in use for ${existing.destination}`, frame)
      return
    }
    if (!this.#subscriptions.add(id, destination, ack as AckMode)) {
      this.#receipt(frame)
      return
    }
    this.#awaitEngine(this.#client!.subscribe([{ topic: destination, qos: 1 }]), (codes) => {
      const code = codes[0] ?? 0x80
      if (code < 0x80) {
        this.#receipt(frame)
        return
      }
      this.#subscriptions.remove(id)
      this.#fail('subscribe refused', code === 0x87 ? `not authorized to subscribe to ${destination}` : `the subscription to ${destination} was refused (reason code 0x${code.toString(16)})`, frame)
    })
  }

  #unsubscribe (frame: StompFrame): void {
    const id = frame.headers.get('id') ?? (this.#version === '1.0' ? frame.headers.get('destination') : undefined)
    if (id === undefined) {
      this.#fail('missing id', 'UNSUBSCRIBE without an id header', frame)
      return
    }
    const subscription = this.#subscriptions.get(id)
    if (subscription === undefined || !this.#subscriptions.remove(id)) {
      this.#receipt(frame)
      return
    }
    this.#awaitEngine(this.#client!.unsubscribe([subscription.destination]), () => this.#receipt(frame))
  }

  // ---- MESSAGE, ACK / NACK --------------------------------------------------

  #message (message: GatewayMessage, ack: (reasonCode?: number) => void): void {
    if (this.#state !== 'connected') return
    let full = false
    this.#subscriptions.deliver(message.topic, message.qos, ack, (subscription, messageId) => {
      full = !this.#write('MESSAGE', this.#messageHeaders(message, subscription, messageId), message.payload) || full
    })
    // a slow reader: the engine's messages wait in the link (and the engine's queue) until the socket drains
    if (full && this.#client !== undefined) {
      const client = this.#client
      this.#link!.stream.pause()
      this.#socket.once('drain', () => { if (client.open) this.#link!.stream.resume() })
    }
  }

  #messageHeaders (message: GatewayMessage, subscription: Subscription, messageId: string): Array<[string, string]> {
    const properties = message.userProperties
    const contentType = properties['content-type']
    const headers: Array<[string, string]> = [
      ['subscription', subscription.id],
      ['message-id', messageId],
      ['destination', message.topic],
      ['content-type', (Array.isArray(contentType) ? contentType[0] : contentType) ?? 'text/plain']
    ]
    if (this.#version === '1.2' && subscription.ack !== 'auto') headers.push(['ack', messageId])
    for (const [name, value] of Object.entries(properties)) {
      if (!MESSAGE_OWN_HEADERS.includes(name)) headers.push([name, Array.isArray(value) ? value[0] : value])
    }
    return headers
  }

  #ack (frame: StompFrame, nack: boolean): void {
    // 1.2 names the message by `id` (MESSAGE's `ack`), 1.0 and 1.1 by `message-id`
    const id = frame.headers.get('id') ?? frame.headers.get('message-id')
    if (id === undefined) {
      this.#fail('missing id', `${frame.command} without an id header`, frame)
      return
    }
    // an id no message awaits (acknowledged already, or a QoS 0 message) is taken as done
    this.#subscriptions.acknowledge(id, nack)
    this.#receipt(frame)
  }

  // ---- transactions ---------------------------------------------------------

  #inTransaction (transaction: string, frame: StompFrame): void {
    const error = this.#transactions.add(transaction, frame)
    if (error !== undefined) this.#fail('transaction refused', error, frame)
    else this.#receipt(frame)
  }

  #transaction (frame: StompFrame): void {
    const id = frame.headers.get('transaction')
    if (id === undefined) {
      this.#fail('missing transaction', `${frame.command} without a transaction header`, frame)
      return
    }
    if (frame.command === 'BEGIN') {
      const error = this.#transactions.begin(id)
      if (error !== undefined) this.#fail('transaction refused', error, frame)
      else this.#receipt(frame)
      return
    }
    if (frame.command === 'ABORT') {
      const error = this.#transactions.abort(id)
      if (error !== undefined) this.#fail('transaction refused', error, frame)
      else this.#receipt(frame)
      return
    }
    const frames = this.#transactions.commit(id)
    if (typeof frames === 'string') {
      this.#fail('transaction refused', frames, frame)
      return
    }
    for (const held of frames) {
      if (this.#state !== 'connected') return
      this.#act(held)
    }
    this.#receipt(frame)
  }

  // ---- DISCONNECT -----------------------------------------------------------

  /** The receipt comes once every earlier frame was answered by the engine; then the connection closes. */
  #disconnect (frame: StompFrame): void {
    this.#disconnecting = true
    const finish = (): void => {
      if (this.#state !== 'connected') return
      this.#receipt(frame)
      this.#close()
    }
    if (this.#pending === 0) finish()
    else this.#whenSettled.push(finish)
  }
}

/** The highest version both speak: `accept-version` absent is 1.0 (STOMP 1.1 §Protocol Negotiation). */
export function negotiateVersion (accept: string | undefined): string | undefined {
  if (accept === undefined) return '1.0'
  const offered = new Set(accept.split(',').map((v) => v.trim()))
  for (let i = VERSIONS.length - 1; i >= 0; i--) if (offered.has(VERSIONS[i])) return VERSIONS[i]
  return undefined
}

/** MQTT topics are at most 65535 bytes of UTF-8. */
function tooLong (topic: string): boolean {
  return topic.length > 0x3fff && Buffer.byteLength(topic) > 0xffff
}

function refusalText (reason: string): string {
  switch (reason) {
    case 'bad_username_or_password': return 'bad login or passcode (bad_username_or_password)'
    case 'not_authorized': return 'not authorized (not_authorized)'
    case 'banned': return 'this client is banned (banned)'
    case 'client_identifier_not_valid': return 'the client-id is not valid (client_identifier_not_valid)'
    case 'quota_exceeded': case 'server_busy': return `the server cannot take the connection now (${reason})`
    default: return `refused (${reason})`
  }
}
