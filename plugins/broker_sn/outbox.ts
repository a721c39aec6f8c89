// What the gateway sends one MQTT-SN client of its own accord: the engine's
// messages and the REGISTERs they need, in order, one acknowledged exchange
// at a time (§6.7, §6.13). A message for a topic the client has no id for
// (a wildcard subscription) waits behind a REGISTER until its REGACK. A
// QoS 1/2 message holds the engine's acknowledgement until the client's
// PUBACK / PUBREC, so the engine's window bounds them; QoS 0 messages are
// bounded here (`mqtt.sn.max_queue_len`). Unacknowledged PUBLISH, PUBREL and
// REGISTER are sent again every `mqtt.sn.retry_interval` (PUBLISH with DUP),
// `mqtt.sn.max_retries` times; then the client is taken for lost. Nothing
// goes out while the client sleeps: the queue waits for its wake-up.
import type { GatewayMessage, PluginTimer, PluginContext } from '../../lib/plugin-kit/index.js'
import { flags, RC, TOPIC, type SnPacket } from './codec.js'
import type { TopicRegistry } from './topics.js'

type Ack = (reasonCode?: number) => void

type Item =
  | { kind: 'message', message: GatewayMessage, ack: Ack }
  /** subs_resume: tell the client the id of a topic it is subscribed to */
  | { kind: 'register', topic: string }

interface Outstanding {
  kind: 'publish' | 'pubrel' | 'register'
  msgId: number
  packet: SnPacket
  tries: number
  item: Item
}

export interface OutboxDeps {
  timers: PluginContext<unknown>['timers']
  registry: TopicRegistry
  /** writes a packet to the client; false when it was not sent (over mqtt.sn.max_packet_size) */
  send: (packet: SnPacket) => boolean
  limits: () => { retryInterval: number, maxRetries: number, maxQueueLen: number }
  /** a message was dropped for this client */
  dropped: () => void
  /** the client did not acknowledge within the retries */
  giveUp: () => void
}

/** Engine refusal code for a message the client cannot get (quota exceeded / unspecified). */
const NOT_DELIVERED = 0x80
const MAX_MSG_ID = 0xffff

export class Outbox {
  readonly #deps: OutboxDeps
  readonly #queue: Item[] = []
  #outstanding: Outstanding | undefined
  #timer: PluginTimer | undefined
  #nextId = 1
  /** whether the client is awake to take packets */
  #running = false

  constructor (deps: OutboxDeps) {
    this.#deps = deps
  }

  /** messages waiting, and the one unacknowledged */
  get length (): number {
    return this.#queue.length + (this.#outstanding === undefined ? 0 : 1)
  }

  /** A message of the engine for the client; false when the queue was full (it is dropped: acknowledged as not delivered). */
  message (message: GatewayMessage, ack: Ack): boolean {
    if (this.#queue.length >= this.#deps.limits().maxQueueLen) {
      this.#deps.dropped()
      ack(NOT_DELIVERED)
      return false
    }
    this.#queue.push({ kind: 'message', message, ack })
    this.#pump()
    return true
  }

  /** subs_resume: REGISTER these topics to the client, before any message. */
  registerAll (topics: string[]): void {
    for (const topic of topics) this.#queue.push({ kind: 'register', topic })
    this.#pump()
  }

  /** Starts (or resumes) sending; an exchange left unacknowledged is sent again at once. */
  start (): void {
    this.#running = true
    if (this.#outstanding !== undefined) this.#resend(this.#outstanding)
    else this.#pump()
  }

  /** Stops sending (the client sleeps); what is unacknowledged stays so. */
  stop (): void {
    this.#running = false
    this.#cancelTimer()
  }

  /** Nothing waits and nothing is unacknowledged. */
  get idle (): boolean {
    return this.#queue.length === 0 && this.#outstanding === undefined
  }

  /** Whenever the outbox empties while running (the awake client's PINGRESP). */
  onIdle: () => void = () => {}

  // ---- the client's answers -----------------------------------------------

  puback (msgId: number, returnCode: number): boolean {
    const out = this.#outstanding
    if (out?.kind !== 'publish' || out.msgId !== msgId || out.item.kind !== 'message' || out.item.message.qos !== 1) return false
    if (returnCode !== RC.ACCEPTED) this.#refused(out.item.message.topic, returnCode)
    out.item.ack(returnCode === RC.ACCEPTED ? 0 : NOT_DELIVERED)
    this.#done()
    return true
  }

  pubrec (msgId: number): boolean {
    const out = this.#outstanding
    if (out === undefined || out.msgId !== msgId || out.item.kind !== 'message') return false
    if (out.kind === 'pubrel') {
      // our PUBREL was lost: the client sent PUBREC again
      this.#resend(out)
      return true
    }
    if (out.kind !== 'publish' || out.item.message.qos !== 2) return false
    out.item.ack(0)
    this.#exchange({ kind: 'pubrel', msgId, packet: { type: 'pubrel', msgId }, tries: 0, item: out.item })
    return true
  }

  pubcomp (msgId: number): boolean {
    const out = this.#outstanding
    if (out?.kind !== 'pubrel' || out.msgId !== msgId) return false
    this.#done()
    return true
  }

  regack (msgId: number, returnCode: number): boolean {
    const out = this.#outstanding
    // matched by MsgId (a client may echo the TopicId wrongly: the id stays the gateway's)
    if (out?.kind !== 'register' || out.msgId !== msgId || out.packet.type !== 'register') return false
    if (returnCode !== RC.ACCEPTED) {
      const topic = out.packet.topicName
      this.#deps.registry.forget(topic)
      // the message that needed it cannot be sent
      if (out.item.kind === 'message') {
        this.#deps.dropped()
        out.item.ack(NOT_DELIVERED)
        this.#queue.shift()
      }
    }
    // a register item is done; a message item is the queue's head, sent next
    if (out.item.kind === 'register') this.#queue.shift()
    this.#done()
    return true
  }

  /** The session ends: what waits is dropped (the engine keeps a persistent session's unacknowledged messages). */
  clear (): void {
    this.#running = false
    this.#cancelTimer()
    this.#queue.length = 0
    this.#outstanding = undefined
  }

  // ---- sending --------------------------------------------------------------

  #pump (): void {
    while (this.#running && this.#outstanding === undefined) {
      const item = this.#queue[0]
      if (item === undefined) {
        this.onIdle()
        return
      }
      if (item.kind === 'register') {
        if (this.#deps.registry.reference(item.topic) !== undefined || !this.#register(item.topic, item)) this.#queue.shift()
        continue
      }
      const { message } = item
      const ref = this.#deps.registry.reference(message.topic)
      if (ref === undefined) {
        if (this.#register(message.topic, item)) continue
        // the client holds as many topic ids as it may
        this.#queue.shift()
        this.#deps.dropped()
        item.ack(NOT_DELIVERED)
        continue
      }
      this.#queue.shift()
      const msgId = message.qos === 0 ? 0 : this.#msgId()
      const packet: SnPacket = {
        type: 'publish',
        flags: flags({ qos: message.qos, retain: message.retain, topicIdType: ref.topicIdType }),
        topicId: ref.topicId,
        msgId,
        data: message.payload
      }
      if (!this.#deps.send(packet)) {
        // too large for the client's packets
        this.#deps.dropped()
        item.ack(NOT_DELIVERED)
        continue
      }
      if (message.qos === 0) continue
      this.#exchange({ kind: 'publish', msgId, packet, tries: 0, item })
    }
  }

  /** Sends a REGISTER for `topic` (its id assigned now); false when the client may hold no more ids. */
  #register (topic: string, item: Item): boolean {
    const topicId = this.#deps.registry.register(topic)
    if (topicId === undefined) return false
    const msgId = this.#msgId()
    const packet: SnPacket = { type: 'register', topicId, msgId, topicName: topic }
    if (!this.#deps.send(packet)) {
      this.#deps.registry.forget(topic)
      return false
    }
    this.#exchange({ kind: 'register', msgId, packet, tries: 0, item })
    return true
  }

  #exchange (out: Outstanding): void {
    this.#outstanding = out
    if (out.kind === 'pubrel') this.#deps.send(out.packet)
    this.#arm()
  }

  #arm (): void {
    this.#cancelTimer()
    if (!this.#running) return
    this.#timer = this.#deps.timers.setTimeout(() => this.#retry(), this.#deps.limits().retryInterval)
  }

  #retry (): void {
    this.#timer = undefined
    const out = this.#outstanding
    if (out === undefined || !this.#running) return
    if (out.tries >= this.#deps.limits().maxRetries) {
      this.#deps.giveUp()
      return
    }
    this.#resend(out)
  }

  #resend (out: Outstanding): void {
    out.tries++
    if (out.packet.type === 'publish') out.packet = { ...out.packet, flags: { ...out.packet.flags, dup: true } }
    this.#deps.send(out.packet)
    this.#arm()
  }

  #done (): void {
    this.#cancelTimer()
    this.#outstanding = undefined
    this.#pump()
  }

  #refused (topic: string, returnCode: number): void {
    this.#deps.dropped()
    // the client lost the topic's id: the next message for it registers it again
    if (returnCode === RC.INVALID_TOPIC_ID && this.#deps.registry.reference(topic)?.topicIdType === TOPIC.NORMAL) this.#deps.registry.forget(topic)
  }

  #cancelTimer (): void {
    this.#timer?.cancel()
    this.#timer = undefined
  }

  #msgId (): number {
    const id = this.#nextId
    this.#nextId = id >= MAX_MSG_ID ? 1 : id + 1
    return id
  }
}

