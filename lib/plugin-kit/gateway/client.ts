// The MQTT 5 client a protocol gateway runs for each of its clients, over
// the in-process link `ctx.gateway.connect` opens to the engine (see
// README.md, "Protocol gateways"). It speaks mqtt-packet over the link:
// connect, subscribe/unsubscribe, publish at QoS 0/1/2 (answered with the
// engine's reason code), the engine's messages back with an `ack` the gateway
// calls when its own client acknowledged, keep-alive pings, and one `onClose`
// saying why the link ended (a kick, a takeover, the node stopping …).
import mqttPacket, { type IConnectPacket, type IPublishPacket, type Packet, type UserProperties } from 'mqtt-packet'
import type { GatewayLink, PluginTimer, PluginContext } from '../contract.js'
import { reasonName } from './reason-codes.js'

export type QoS = 0 | 1 | 2

export interface GatewayConnectOptions {
  clientId: string
  username?: string
  password?: Buffer | string
  /** seconds; the client pings the engine at half this, and the listings show it; 0: none (default) */
  keepalive?: number
  /** default true */
  cleanStart?: boolean
  /** seconds the session outlives the link (MQTT 5 Session Expiry Interval); default 0 */
  sessionExpiry?: number
  will?: { topic: string, payload: Buffer | string, qos?: QoS, retain?: boolean }
}

export interface GatewayConnack {
  /** the MQTT 5 CONNACK reason code: 0 accepted, 0x86 bad user name or password, 0x87 not authorized, 0x8A banned … */
  reasonCode: number
  /** `success` or the refusal in EMQ X's words (`not_authorized`, `banned` …) */
  reason: string
  sessionPresent: boolean
}

export interface GatewayPublish {
  topic: string
  payload: Buffer | string
  qos?: QoS
  retain?: boolean
  /** MQTT 5 user properties (a gateway's own headers) */
  userProperties?: UserProperties
}

export interface GatewayMessage {
  topic: string
  payload: Buffer
  qos: QoS
  retain: boolean
  dup: boolean
  /** the subscription identifiers of the gateway's subscriptions the message matched */
  subscriptionIds: number[]
  userProperties: UserProperties
}

export interface GatewayFilter {
  topic: string
  qos: QoS
}

/** Why the link ended: the engine's DISCONNECT (or refusing CONNACK) reason code when it sent one, and its name (`administrative_action` for a kick). */
export interface GatewayClose {
  reasonCode?: number
  /** `administrative_action` (kicked), `session_taken_over`, `server_shutting_down`, a CONNACK refusal (`not_authorized`, `banned` …), `closed` (no reason given) … */
  reason: string
}

export interface GatewayClientHandlers {
  /** a message for the gateway's client; QoS 1/2: call `ack` once the client took it (a code ≥ 0x80 refuses it) */
  onMessage: (message: GatewayMessage, ack: (reasonCode?: number) => void) => void
  /** once, when the link ended */
  onClose: (close: GatewayClose) => void
}

interface Waiter { resolve: (packet: Packet) => void, reject: (err: Error) => void }

const MAX_PACKET_ID = 0xffff

/** The link closed before the engine answered. */
export class GatewayLinkClosed extends Error {
  constructor (what: string) {
    super(`the link to the broker closed before ${what}`)
    this.name = 'GatewayLinkClosed'
  }
}

export class GatewayClient {
  readonly #link: GatewayLink
  readonly #timers: PluginContext<unknown>['timers']
  readonly #handlers: GatewayClientHandlers
  readonly #parser = mqttPacket.parser({ protocolVersion: 5 })
  /** answers awaited, by packet id (PUBACK/PUBREC/PUBCOMP, SUBACK, UNSUBACK) */
  readonly #waiting = new Map<number, Waiter>()
  #connack: Waiter | undefined
  /** QoS 1/2 publishes waiting for room in the engine's Receive Maximum */
  readonly #queued: Array<() => void> = []
  #inflight = 0
  #receiveMaximum = MAX_PACKET_ID
  #nextId = 1
  #ping: PluginTimer | undefined
  #closeCode: number | undefined
  #closed = false

  constructor (link: GatewayLink, timers: PluginContext<unknown>['timers'], handlers: GatewayClientHandlers) {
    this.#link = link
    this.#timers = timers
    this.#handlers = handlers
    const stream = link.stream
    this.#parser.on('packet', (packet: Packet) => this.#packet(packet))
    this.#parser.on('error', () => stream.destroy())
    stream.on('data', (chunk: Buffer) => this.#parser.parse(chunk))
    stream.on('error', () => {})
    // the engine half-closed (after its DISCONNECT, or refusing the CONNECT): nothing more to say either
    stream.on('end', () => stream.destroy())
    stream.on('close', () => this.#finish())
  }

  /** The link is open (it has not closed). */
  get open (): boolean {
    return !this.#closed
  }

  /** QoS 1/2 publishes sent and not yet answered, plus those waiting for room. */
  get backlog (): number {
    return this.#inflight + this.#queued.length
  }

  /** Sends CONNECT; resolves with the CONNACK (a refusal too: the engine closes the link after it). */
  async connect (options: GatewayConnectOptions): Promise<GatewayConnack> {
    const keepalive = options.keepalive ?? 0
    const packet: IConnectPacket = {
      cmd: 'connect',
      protocolId: 'MQTT',
      protocolVersion: 5,
      clientId: options.clientId,
      clean: options.cleanStart ?? true,
      keepalive,
      properties: options.sessionExpiry === undefined || options.sessionExpiry === 0 ? undefined : { sessionExpiryInterval: options.sessionExpiry }
    }
    if (options.username !== undefined) packet.username = options.username
    if (options.password !== undefined) packet.password = Buffer.from(options.password)
    if (options.will !== undefined) packet.will = { ...options.will, qos: options.will.qos ?? 0, retain: options.will.retain ?? false }
    const answer = new Promise<Packet>((resolve, reject) => { this.#connack = { resolve, reject } })
    this.#send(packet)
    const connack = await answer
    if (connack.cmd !== 'connack') throw new Error('expected CONNACK')
    const reasonCode = connack.reasonCode ?? 0
    if (reasonCode === 0) {
      this.#receiveMaximum = connack.properties?.receiveMaximum ?? MAX_PACKET_ID
      if (keepalive > 0 && !this.#closed) this.#ping = this.#timers.setInterval(() => this.#send({ cmd: 'pingreq' }), keepalive * 500)
    }
    return { reasonCode, reason: reasonName(reasonCode), sessionPresent: connack.sessionPresent }
  }

  /** Publishes; resolves with the engine's answer: 0 for QoS 0, the PUBACK (QoS 1) or PUBREC (QoS 2) reason code (≥ 0x80: refused, e.g. 0x87 by the ACL). */
  async publish (message: GatewayPublish): Promise<number> {
    const qos = message.qos ?? 0
    const packet: IPublishPacket = {
      cmd: 'publish',
      topic: message.topic,
      payload: typeof message.payload === 'string' ? Buffer.from(message.payload) : message.payload,
      qos,
      retain: message.retain ?? false,
      dup: false,
      // (mqtt-packet writes nothing at all for an empty userProperties object)
      properties: message.userProperties === undefined || Object.keys(message.userProperties).length === 0 ? undefined : { userProperties: message.userProperties }
    }
    if (qos === 0) {
      if (this.#closed) throw new GatewayLinkClosed('the message was sent')
      this.#send(packet)
      return 0
    }
    await this.#room()
    this.#inflight++
    try {
      packet.messageId = this.#packetId()
      const answer = await this.#request(packet.messageId, packet, 'the message was acknowledged')
      const code = (answer as { reasonCode?: number }).reasonCode ?? 0
      if (qos === 1 || code >= 0x80) return code
      // QoS 2: PUBREL, then PUBCOMP ends it
      await this.#request(packet.messageId, { cmd: 'pubrel', messageId: packet.messageId }, 'the message was completed')
      return code
    } finally {
      this.#inflight--
      this.#queued.shift()?.()
    }
  }

  /** One SUBSCRIBE; `subscriptionId` (1 … 268435455) comes back with each message it matches. Resolves with the SUBACK codes (granted QoS, or ≥ 0x80 refused). */
  async subscribe (filters: GatewayFilter[], subscriptionId?: number): Promise<number[]> {
    const messageId = this.#packetId()
    const answer = await this.#request(messageId, {
      cmd: 'subscribe',
      messageId,
      subscriptions: filters.map(({ topic, qos }) => ({ topic, qos })),
      properties: subscriptionId === undefined ? undefined : { subscriptionIdentifier: subscriptionId }
    }, 'the subscription was acknowledged')
    return answer.cmd === 'suback' ? answer.granted.map(Number) : []
  }

  /** One UNSUBSCRIBE; resolves with the UNSUBACK codes. */
  async unsubscribe (topics: string[]): Promise<number[]> {
    const messageId = this.#packetId()
    const answer = await this.#request(messageId, { cmd: 'unsubscribe', messageId, unsubscriptions: topics }, 'the unsubscription was acknowledged')
    return answer.cmd === 'unsuback' ? (answer as { granted?: number[] }).granted ?? [] : []
  }

  /** A normal DISCONNECT (no will), then the link ends. */
  disconnect (reasonCode = 0): void {
    if (this.#closed) return
    this.#send({ cmd: 'disconnect', reasonCode })
    this.#link.stream.end()
  }

  /** Ends the link at once (the engine sees the connection drop: a will is published). */
  destroy (): void {
    this.#link.stream.destroy()
  }

  #send (packet: Packet): void {
    const stream = this.#link.stream
    if (this.#closed || stream.destroyed || stream.writableEnded) return
    const bytes = mqttPacket.generate(packet, { protocolVersion: 5 })
    // mqtt-packet answers an empty buffer for a packet it cannot write: a bug here, never silence
    if (bytes.length === 0) throw new Error(`mqtt-packet could not write a ${packet.cmd} packet`)
    stream.write(bytes)
  }

  async #request (messageId: number, packet: Packet, what: string): Promise<Packet> {
    if (this.#closed) throw new GatewayLinkClosed(what)
    const answer = new Promise<Packet>((resolve, reject) => { this.#waiting.set(messageId, { resolve, reject }) })
    this.#send(packet)
    return await answer
  }

  async #room (): Promise<void> {
    if (this.#inflight < this.#receiveMaximum) return
    await new Promise<void>((resolve) => this.#queued.push(resolve))
    if (this.#closed) throw new GatewayLinkClosed('the message was sent')
  }

  /** A packet id no request is waiting on. */
  #packetId (): number {
    for (let tries = 0; tries < MAX_PACKET_ID; tries++) {
      const id = this.#nextId
      this.#nextId = id === MAX_PACKET_ID ? 1 : id + 1
      if (!this.#waiting.has(id)) return id
    }
    throw new Error('no free packet id')
  }

  #packet (packet: Packet): void {
    switch (packet.cmd) {
      case 'connack': {
        // a refusal: the engine closes the link next, and that close is for this reason
        if ((packet.reasonCode ?? 0) >= 0x80) this.#closeCode = packet.reasonCode
        const waiter = this.#connack
        this.#connack = undefined
        waiter?.resolve(packet)
        return
      }
      case 'publish':
        this.#message(packet)
        return
      case 'pubrel':
        // the engine released an incoming QoS 2 message the gateway acknowledged: complete it
        this.#send({ cmd: 'pubcomp', messageId: packet.messageId })
        return
      case 'puback': case 'pubrec': case 'pubcomp': case 'suback': case 'unsuback': {
        const id = packet.messageId ?? 0
        const waiter = this.#waiting.get(id)
        this.#waiting.delete(id)
        waiter?.resolve(packet)
        return
      }
      case 'disconnect':
        this.#closeCode = packet.reasonCode ?? 0
        return
      default:
    }
  }

  #message (packet: IPublishPacket): void {
    const ids = packet.properties?.subscriptionIdentifier
    const message: GatewayMessage = {
      topic: packet.topic,
      payload: typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload,
      qos: packet.qos,
      retain: packet.retain,
      dup: packet.dup,
      subscriptionIds: ids === undefined ? [] : Array.isArray(ids) ? ids : [ids],
      userProperties: packet.properties?.userProperties ?? {}
    }
    const messageId = packet.messageId
    let acked = packet.qos === 0
    const ack = (reasonCode = 0): void => {
      if (acked) return
      acked = true
      this.#send({ cmd: packet.qos === 1 ? 'puback' : 'pubrec', messageId, reasonCode })
    }
    this.#handlers.onMessage(message, ack)
  }

  #finish (): void {
    if (this.#closed) return
    this.#closed = true
    this.#ping?.cancel()
    this.#ping = undefined
    const code = this.#closeCode
    const failed = (what: string): GatewayLinkClosed => new GatewayLinkClosed(what)
    this.#connack?.reject(failed('its CONNACK'))
    this.#connack = undefined
    for (const waiter of this.#waiting.values()) waiter.reject(failed('it answered'))
    this.#waiting.clear()
    for (const wake of this.#queued.splice(0)) wake()
    this.#handlers.onClose(code === undefined ? { reason: 'closed' } : { reasonCode: code, reason: reasonName(code) })
  }
}
