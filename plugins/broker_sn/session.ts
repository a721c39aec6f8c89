// One MQTT-SN client, keyed by its UDP address: its state (§6.14: active,
// asleep, awake), the CONNECT and will exchange, its link to the engine (the
// kit's GatewayClient, so the auth chain, the ACL, the listings and kicks
// apply), what it publishes and subscribes, its keep-alive and sleep timers.
// What the gateway sends it of its own accord is the Outbox's.
import { GatewayClient, GatewayLinkClosed, HeldBytes, validTopicFilter, validTopicName, type GatewayClose, type GatewayLink, type GatewayMessage, type PluginContext, type PluginTimer, type QoS } from '../../lib/plugin-kit/index.js'
import { flags, PROTOCOL_ID, RC, TOPIC, type Flags, type SnPacket } from './codec.js'
import { Outbox } from './outbox.js'
import { predefinedTopics, type SnConfig } from './settings.js'
import { TopicRegistry } from './topics.js'
import type { SnCounters } from './counters.js'

export const PROTOCOL = 'mqtt-sn:udp'
export const LISTENER_ID = 'mqtt-sn:udp:default'
export const PROTO_VER = '1.2'

/** incoming QoS 2 messages of one client awaiting its PUBREL, and requests awaiting the engine, beyond which it gets CONGESTION */
const MAX_AWAITING_REL = 128
const MAX_PENDING = 256
/** octets the link may hold unread by the engine before a QoS 0/−1 PUBLISH is dropped */
const LINK_BUFFER_MAX = 1024 * 1024
/** a keep-alive or sleep duration is this many times the client's (as MQTT's one and a half) */
const GRACE = 1.5
/** the MQTT 5 Session Expiry Interval asked for a CleanSession=0 client: the engine clamps it to the zone's */
const KEEP_SESSION = 0xfffffffe
/** subs_resume: how often, and how many times, the engine is asked whether the resumed client is online */
const RESUME_EVERY_MS = 20
const RESUME_TRIES = 250

type State = 'will_topic' | 'will_msg' | 'connecting' | 'connected' | 'asleep' | 'awake' | 'closed'

interface Will { topic?: string, payload?: Buffer, qos: QoS, retain: boolean }

/** The listener's connection counts (its row of the listeners API). */
export interface ListenerCounts { closed: number, kicked: number }

export interface SessionDeps {
  ctx: PluginContext<SnConfig>
  counters: SnCounters
  listener: ListenerCounts
  /** writes octets to this client's address */
  write: (bytes: Buffer) => void
  /** encodes, or undefined when over mqtt.sn.max_packet_size */
  encode: (packet: SnPacket) => Buffer | undefined
  /** the session ended: forget its address */
  gone: () => void
  /** a refused client, logged at warning at a rate a hostile sender cannot flood (the gateway's one limit) */
  refused: (fields: Record<string, unknown>, message: string) => void
}

export class SnSession {
  readonly #ctx: PluginContext<SnConfig>
  readonly #deps: SessionDeps
  readonly #registry: TopicRegistry
  readonly #outbox: Outbox
  #state: State = 'will_topic'
  #clientId = ''
  #duration = 0
  #clean = true
  #will: Will | undefined
  #link: GatewayLink | undefined
  #client: GatewayClient | undefined
  #lastHeard = Date.now()
  #timer: PluginTimer | undefined
  #sleepFor = 0
  /** incoming QoS 2 message ids: published, awaiting PUBREL (true), or still with the engine (false) */
  readonly #awaitingRel = new Map<number, boolean>()
  #pending = 0
  readonly #bytes = new HeldBytes()

  constructor (readonly address: string, readonly port: number, deps: SessionDeps) {
    this.#ctx = deps.ctx
    this.#deps = deps
    // read at each use: a reload gives a new load and new sessions anyway
    const predefined = predefinedTopics(this.#ctx.config)
    this.#registry = new TopicRegistry(() => predefined)
    this.#outbox = new Outbox({
      timers: this.#ctx.timers,
      registry: this.#registry,
      send: (packet) => this.#send(packet),
      limits: () => ({
        retryInterval: this.#ctx.config['mqtt.sn.retry_interval'],
        maxRetries: this.#ctx.config['mqtt.sn.max_retries'],
        maxQueueLen: this.#ctx.config['mqtt.sn.max_queue_len']
      }),
      dropped: () => this.#deps.counters.messagesDropped.inc(),
      giveUp: () => this.#lost('no acknowledgement after the retries')
    })
    this.#outbox.onIdle = () => {
      if (this.#state !== 'awake') return
      // §6.14: the buffered messages are out, PINGRESP sends the client back to sleep
      this.#send({ type: 'pingresp' })
      this.#asleep()
    }
  }

  get state (): State {
    return this.#state
  }

  get clientId (): string {
    return this.#clientId
  }

  /** the client's packets, from its address */
  packet (packet: SnPacket, octets: number): void {
    this.#lastHeard = Date.now()
    this.#countBytes(octets, 0)
    switch (packet.type) {
      case 'connect': this.#connect(packet.flags, packet.protocolId, packet.duration, packet.clientId); return
      case 'willtopic': this.#willTopic(packet.flags, packet.topic); return
      case 'willmsg': this.#willMessage(packet.message); return
      case 'disconnect': this.#disconnect(packet.duration); return
      case 'pingreq': this.#pingreq(packet.clientId); return
      default:
    }
    if (this.#state === 'connected' || this.#state === 'awake') {
      if (this.#active(packet)) return
    } else if (this.#state === 'asleep' && this.#acknowledgement(packet)) {
      return
    }
    this.#deps.counters.dropped.inc()
  }

  /** The plugin unloads: tell the client, end the link normally. */
  close (): void {
    if (this.#state === 'closed') return
    this.#send({ type: 'disconnect' })
    this.#end()
  }

  // ---- CONNECT and the will exchange ---------------------------------------

  #connect (f: Flags, protocolId: number, duration: number, clientId: string): void {
    if (protocolId !== PROTOCOL_ID || clientId === '') {
      this.#refuse(RC.NOT_SUPPORTED, protocolId !== PROTOCOL_ID ? `protocol id ${protocolId}` : 'empty client id')
      return
    }
    if (this.#state === 'connecting') return // sent again while the engine decides
    if ((this.#state === 'asleep' || this.#state === 'awake') && clientId === this.#clientId && !f.will) {
      // §6.14: a sleeping client back to active
      this.#duration = duration
      this.#send({ type: 'connack', returnCode: RC.ACCEPTED })
      this.#activate()
      return
    }
    if (this.#client !== undefined) {
      // a new CONNECT of a connected client (it rebooted): the old connection ends normally, the new one starts
      const old = this.#client
      this.#client = undefined
      this.#link = undefined
      old.disconnect()
      this.#outbox.clear()
      this.#registry.clear()
      this.#awaitingRel.clear()
    }
    this.#clientId = clientId
    this.#duration = duration
    this.#clean = f.cleanSession
    this.#will = undefined
    this.#timeout(this.#ctx.config['mqtt.sn.idle_timeout'], () => this.#refuse(RC.CONGESTION, 'idle timeout'))
    if (f.will) {
      this.#state = 'will_topic'
      this.#send({ type: 'willtopicreq' })
      return
    }
    this.#openLink()
  }

  #willTopic (f: Flags | undefined, topic: string | undefined): void {
    if (this.#state === 'will_msg' && topic !== undefined && topic === this.#will?.topic) {
      // our WILLMSGREQ was lost
      this.#send({ type: 'willmsgreq' })
      return
    }
    if (this.#state !== 'will_topic') {
      this.#deps.counters.dropped.inc()
      return
    }
    if (topic === undefined || f === undefined) {
      this.#openLink()
      return
    }
    if (!validTopicName(topic)) {
      this.#refuse(RC.NOT_SUPPORTED, 'invalid will topic')
      return
    }
    this.#will = { topic, qos: willQoS(f), retain: f.retain }
    this.#state = 'will_msg'
    this.#send({ type: 'willmsgreq' })
  }

  #willMessage (message: Buffer): void {
    if (this.#state !== 'will_msg' || this.#will === undefined) {
      this.#deps.counters.dropped.inc()
      return
    }
    this.#will.payload = message
    this.#openLink()
  }

  #openLink (): void {
    this.#state = 'connecting'
    const config = this.#ctx.config
    const link = this.#ctx.gateway.connect({
      protocol: PROTOCOL,
      listener: LISTENER_ID,
      ipAddress: this.address,
      port: this.port,
      protoName: 'MQTT-SN',
      protoVer: PROTO_VER
    })
    this.#bytes.flushTo(link)
    const client: GatewayClient = new GatewayClient(link, this.#ctx.timers, {
      onMessage: (message, ack) => { if (this.#client === client) this.#message(message, ack) },
      onClose: (close) => { if (this.#client === client) this.#linkClosed(close) }
    })
    this.#link = link
    this.#client = client
    const username = config['mqtt.sn.username']
    client.connect({
      clientId: this.#clientId,
      username: username === '' ? undefined : username,
      password: username === '' ? undefined : config['mqtt.sn.password'],
      keepalive: this.#duration,
      cleanStart: this.#clean,
      sessionExpiry: this.#clean ? 0 : KEEP_SESSION
    }).then((connack) => {
      if (this.#client !== client || this.#state !== 'connecting') return
      if (connack.reasonCode !== 0) {
        this.#ctx.logger.debug({ clientId: this.#clientId, reason: connack.reason }, 'MQTT-SN CONNECT refused')
        this.#refuse(connackCode(connack.reasonCode), connack.reason)
        return
      }
      this.#send({ type: 'connack', returnCode: RC.ACCEPTED })
      this.#activate()
      if (connack.sessionPresent && config['mqtt.sn.subs_resume']) this.#resumeSubscriptions(client, RESUME_TRIES)
    }, () => {
      // the link closed before its CONNACK (the node stops): #linkClosed says so
    })
  }

  /**
   * subs_resume: a REGISTER for each topic name the resumed session is
   * subscribed to. The engine lists a client's subscriptions once it is
   * online, which comes a moment after its CONNACK (its stored messages go
   * first): asked again every RESUME_EVERY_MS until it is.
   */
  #resumeSubscriptions (client: GatewayClient, tries: number): void {
    if (this.#client !== client || this.#state === 'closed') return
    if (this.#ctx.node.connection(this.#clientId).length === 0) {
      if (tries > 0) this.#ctx.timers.setTimeout(() => this.#resumeSubscriptions(client, tries - 1), RESUME_EVERY_MS)
      return
    }
    const topics = this.#ctx.node.clientSubscriptions(this.#clientId).map((s) => s.topic).filter((t) => validTopicName(t))
    this.#outbox.registerAll(topics)
  }

  /** CONNACK with a refusal (or an idle timeout), and the session ends. */
  #refuse (returnCode: number, why?: string): void {
    if (why !== undefined) this.#deps.refused({ address: this.address, port: this.port, why }, 'MQTT-SN client refused')
    this.#send({ type: 'connack', returnCode })
    this.#deps.listener.closed++
    this.#end()
  }

  // ---- active, asleep, awake ------------------------------------------------

  /** Active: keep-alive watched, the outbox sends. */
  #activate (): void {
    this.#state = 'connected'
    this.#lastHeard = Date.now()
    this.#keepalive()
    this.#outbox.start()
  }

  #keepalive (): void {
    this.#timer?.cancel()
    this.#timer = undefined
    if (this.#duration === 0) return
    const limit = this.#duration * 1000 * GRACE
    const check = (): void => {
      const silent = Date.now() - this.#lastHeard
      if (silent >= limit) this.#lost('keep-alive timeout')
      else this.#timer = this.#ctx.timers.setTimeout(check, limit - silent)
    }
    this.#timer = this.#ctx.timers.setTimeout(check, limit)
  }

  #timeout (ms: number, run: () => void): void {
    this.#timer?.cancel()
    this.#timer = this.#ctx.timers.setTimeout(run, ms)
  }

  #disconnect (duration: number | undefined): void {
    if (duration !== undefined && duration > 0 && (this.#state === 'connected' || this.#state === 'awake' || this.#state === 'asleep')) {
      this.#sleepFor = duration
      this.#send({ type: 'disconnect' })
      this.#asleep()
      return
    }
    this.#send({ type: 'disconnect' })
    this.#end()
  }

  #asleep (): void {
    this.#state = 'asleep'
    this.#outbox.stop()
    this.#timeout(this.#sleepFor * 1000 * GRACE, () => this.#lost('asleep past its duration'))
  }

  #pingreq (clientId: string | undefined): void {
    switch (this.#state) {
      case 'connected':
        this.#send({ type: 'pingresp' })
        return
      case 'asleep':
        // §6.14: the wake-up PINGREQ names the client
        if (clientId !== this.#clientId) break
        this.#state = 'awake'
        this.#timer?.cancel()
        this.#timer = undefined
        // the buffered messages go out; PINGRESP once they are acknowledged (onIdle)
        this.#outbox.start()
        return
      case 'awake':
        return // sent again while the messages go out
      default:
    }
    this.#deps.counters.dropped.inc()
  }

  /** The client is taken for lost: its will is published (as the client, through the ACL), the connection ends. */
  #lost (why: string): void {
    if (this.#state === 'closed') return
    this.#ctx.logger.debug({ clientId: this.#clientId, why }, 'MQTT-SN client lost')
    const client = this.#client
    const will = this.#will
    this.#client = undefined
    this.#end()
    if (client === undefined) return
    if (will?.topic === undefined || will.payload === undefined) {
      client.disconnect()
      return
    }
    client.publish({ topic: will.topic, payload: will.payload, qos: will.qos, retain: will.retain })
      .catch(() => {})
      .finally(() => client.disconnect())
  }

  /** The session ends here: timers, outbox, the link (normally), the address forgotten. */
  #end (): void {
    if (this.#state === 'closed') return
    this.#state = 'closed'
    this.#timer?.cancel()
    this.#timer = undefined
    this.#outbox.clear()
    const client = this.#client
    this.#client = undefined
    client?.disconnect()
    this.#deps.gone()
  }

  /** The engine closed the link: a kick, a takeover, the node stopping … */
  #linkClosed (close: GatewayClose): void {
    if (this.#state === 'closed') return
    this.#client = undefined
    if (this.#state === 'connecting') {
      this.#refuse(connackCode(close.reasonCode ?? 0x80), close.reason)
      return
    }
    if (close.reason === 'administrative_action') this.#deps.listener.kicked++
    else this.#deps.listener.closed++
    this.#ctx.logger.debug({ clientId: this.#clientId, reason: close.reason }, 'MQTT-SN client disconnected by the broker')
    this.#send({ type: 'disconnect' })
    this.#end()
  }

  // ---- packets of an active client ------------------------------------------

  /** false: not a packet for this state */
  #active (packet: SnPacket): boolean {
    switch (packet.type) {
      case 'register': this.#register(packet.msgId, packet.topicName); return true
      case 'publish': this.#publish(packet.flags, packet.topicId, packet.msgId, packet.data); return true
      case 'pubrel':
        this.#awaitingRel.delete(packet.msgId)
        this.#send({ type: 'pubcomp', msgId: packet.msgId })
        return true
      case 'subscribe': this.#subscribe(packet.flags, packet.msgId, packet.topicName, packet.topicId); return true
      case 'unsubscribe': this.#unsubscribe(packet.flags, packet.msgId, packet.topicName, packet.topicId); return true
      case 'willtopicupd': this.#willTopicUpdate(packet.flags, packet.topic); return true
      case 'willmsgupd':
        this.#will = { qos: 0, retain: false, ...this.#will, payload: packet.message }
        this.#send({ type: 'willmsgresp', returnCode: RC.ACCEPTED })
        return true
      default:
        return this.#acknowledgement(packet)
    }
  }

  /** The client's answers to what the gateway sent (taken asleep too: it may answer before sleeping). */
  #acknowledgement (packet: SnPacket): boolean {
    switch (packet.type) {
      case 'puback': return this.#outbox.puback(packet.msgId, packet.returnCode) || true
      case 'pubrec': return this.#outbox.pubrec(packet.msgId) || true
      case 'pubcomp': return this.#outbox.pubcomp(packet.msgId) || true
      case 'regack': return this.#outbox.regack(packet.msgId, packet.returnCode) || true
      default: return false
    }
  }

  #register (msgId: number, topicName: string): void {
    if (!validTopicName(topicName)) {
      this.#send({ type: 'regack', topicId: 0, msgId, returnCode: RC.NOT_SUPPORTED })
      return
    }
    const topicId = this.#registry.register(topicName)
    this.#send({ type: 'regack', topicId: topicId ?? 0, msgId, returnCode: topicId === undefined ? RC.NOT_SUPPORTED : RC.ACCEPTED })
  }

  #publish (f: Flags, topicId: number, msgId: number, data: Buffer): void {
    const qos = f.qos
    const answer = (returnCode: number): void => {
      // §5.4.13: PUBACK answers QoS 1 and 2, and a refusal at any QoS but −1
      if (qos !== -1) this.#send({ type: 'puback', topicId, msgId, returnCode })
    }
    if (qos === -1 && !this.#ctx.config['mqtt.sn.enable_qos3']) {
      this.#deps.counters.dropped.inc()
      return
    }
    const topic = this.#registry.lookup(f.topicIdType, topicId)
    if (topic === undefined || !validTopicName(topic)) {
      answer(f.topicIdType === TOPIC.NORMAL || f.topicIdType === TOPIC.PREDEFINED ? RC.INVALID_TOPIC_ID : RC.NOT_SUPPORTED)
      return
    }
    const client = this.#client!
    if (qos === 0 || qos === -1) {
      if (this.#link!.stream.writableLength > LINK_BUFFER_MAX) {
        this.#deps.counters.messagesDropped.inc()
        answer(RC.CONGESTION)
        return
      }
      client.publish({ topic, payload: data, qos: 0, retain: f.retain }).catch(() => {})
      return
    }
    if (qos === 2) {
      const state = this.#awaitingRel.get(msgId)
      if (state !== undefined) {
        // sent again: published already (PUBREC again), or still with the engine (its PUBREC comes)
        if (state) this.#send({ type: 'pubrec', msgId })
        return
      }
      if (this.#awaitingRel.size >= MAX_AWAITING_REL) {
        answer(RC.CONGESTION)
        return
      }
    }
    if (this.#pending >= MAX_PENDING) {
      answer(RC.CONGESTION)
      return
    }
    if (qos === 2) this.#awaitingRel.set(msgId, false)
    this.#engine(client.publish({ topic, payload: data, qos, retain: f.retain }), (code) => {
      if (code >= 0x80) {
        this.#awaitingRel.delete(msgId)
        answer(publishCode(code))
      } else if (qos === 2) {
        this.#awaitingRel.set(msgId, true)
        this.#send({ type: 'pubrec', msgId })
      } else {
        answer(RC.ACCEPTED)
      }
    })
  }

  /** The topic filter a SUBSCRIBE / UNSUBSCRIBE names, and the topic id its SUBACK gives; a return code when it names none. */
  #filter (f: Flags, topicName: string | undefined, topicId: number | undefined, register: boolean): { filter: string, topicId: number } | number {
    if (f.topicIdType === TOPIC.NORMAL) {
      if (topicName === undefined || !validTopicFilter(topicName)) return RC.NOT_SUPPORTED
      // SUBSCRIBE: a topic name without wildcards gets its id now (§6.9)
      const id = register && validTopicName(topicName) ? this.#registry.register(topicName) : 0
      return { filter: topicName, topicId: id ?? 0 }
    }
    const filter = this.#registry.lookup(f.topicIdType, topicId ?? 0)
    if (filter === undefined) return f.topicIdType === TOPIC.PREDEFINED ? RC.INVALID_TOPIC_ID : RC.NOT_SUPPORTED
    if (!validTopicFilter(filter)) return RC.NOT_SUPPORTED
    return { filter, topicId: f.topicIdType === TOPIC.PREDEFINED ? topicId ?? 0 : 0 }
  }

  #subscribe (f: Flags, msgId: number, topicName: string | undefined, topicId: number | undefined): void {
    const refuse = (returnCode: number): void => { this.#send({ type: 'suback', flags: flags(), topicId: 0, msgId, returnCode }) }
    if (f.qos === -1) {
      refuse(RC.NOT_SUPPORTED)
      return
    }
    const named = this.#filter(f, topicName, topicId, true)
    if (typeof named === 'number') {
      refuse(named)
      return
    }
    if (this.#pending >= MAX_PENDING) {
      refuse(RC.CONGESTION)
      return
    }
    this.#engine(this.#client!.subscribe([{ topic: named.filter, qos: f.qos }]), (codes) => {
      const code = codes[0] ?? 0x80
      if (code >= 0x80) refuse(publishCode(code))
      else this.#send({ type: 'suback', flags: flags({ qos: code as QoS }), topicId: named.topicId, msgId, returnCode: RC.ACCEPTED })
    })
  }

  #unsubscribe (f: Flags, msgId: number, topicName: string | undefined, topicId: number | undefined): void {
    if (this.#pending >= MAX_PENDING) {
      // UNSUBACK has no return code: no answer, the client sends it again
      this.#deps.counters.dropped.inc()
      return
    }
    const named = this.#filter(f, topicName, topicId, false)
    if (typeof named === 'number') {
      // nothing to unsubscribe: the client is told it is done
      this.#send({ type: 'unsuback', msgId })
      return
    }
    this.#engine(this.#client!.unsubscribe([named.filter]), () => this.#send({ type: 'unsuback', msgId }))
  }

  #willTopicUpdate (f: Flags | undefined, topic: string | undefined): void {
    if (topic === undefined || f === undefined) {
      this.#will = undefined
    } else if (!validTopicName(topic)) {
      this.#send({ type: 'willtopicresp', returnCode: RC.NOT_SUPPORTED })
      return
    } else {
      this.#will = { ...this.#will, topic, qos: willQoS(f), retain: f.retain }
    }
    this.#send({ type: 'willtopicresp', returnCode: RC.ACCEPTED })
  }

  /** An engine answer awaited (bounded by MAX_PENDING). */
  #engine<T> (answer: Promise<T>, then: (value: T) => void): void {
    this.#pending++
    answer.then((value) => {
      if (this.#state !== 'closed') then(value)
    }, (err: Error) => {
      if (!(err instanceof GatewayLinkClosed)) this.#ctx.logger.warn({ err, clientId: this.#clientId }, 'MQTT-SN request failed')
    }).finally(() => { this.#pending-- }).catch(() => {})
  }

  // ---- the engine's messages ------------------------------------------------

  #message (message: GatewayMessage, ack: (reasonCode?: number) => void): void {
    if (this.#state === 'closed') return
    this.#outbox.message(message, ack)
  }

  // ---- bytes ----------------------------------------------------------------

  /** Encodes and writes a packet; false when it is over mqtt.sn.max_packet_size (not sent). */
  #send (packet: SnPacket): boolean {
    const bytes = this.#deps.encode(packet)
    if (bytes === undefined) return false
    this.#countBytes(0, bytes.length)
    this.#deps.write(bytes)
    return true
  }

  #countBytes (read: number, written: number): void {
    this.#bytes.count(this.#link, read, written)
  }
}

/** A will's QoS: −1 is 0 for a will. */
function willQoS (f: Flags): QoS {
  return f.qos === -1 ? 0 : f.qos
}

/** The MQTT-SN return code of an engine refusal (CONNACK): congestion for what may pass later, not supported for the rest (MQTT-SN 1.2 has no "not authorized"). */
function connackCode (reasonCode: number): number {
  return reasonCode === 0x89 || reasonCode === 0x97 || reasonCode === 0x9f ? RC.CONGESTION : RC.NOT_SUPPORTED
}

/** The MQTT-SN return code of a PUBACK / SUBACK refusal by the engine (0x87: the ACL). */
function publishCode (reasonCode: number): number {
  return reasonCode === 0x97 || reasonCode === 0x89 ? RC.CONGESTION : RC.NOT_SUPPORTED
}
