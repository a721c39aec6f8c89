// One CoAP client (one client id, `c=`): its in-process MQTT link to the
// engine (the kit's GatewayClient, proto_name CoAP), its credentials, its
// observations (GET with Observe=0: each an MQTT subscription; each message
// a notification, CON for QoS 1/2 and acknowledged to the engine once the
// CoAP client ACKed it, NON for QoS 0), and its keep-alive.
import { createHash, timingSafeEqual } from 'node:crypto'
import { coap, GatewayClient, plainAddress, topicMatches, type GatewayClose, type GatewayConnack, type GatewayMessage, type PluginContext, type PluginCounter, type PluginTimer, type QoS } from '../../lib/plugin-kit/index.js'
import type { CoapConfig } from './settings.js'

export const PROTOCOL = 'coap:udp'
export const LISTENER_ID = 'coap:udp:default'
/** Content-Format of a notification: application/octet-stream (as EMQ X) */
const OCTET_STREAM = 42
/** the Observe sequence number is 24 bits (RFC 7641 §4.4) */
const OBSERVE_MAX = 0xffffff

export interface ClientDeps {
  ctx: PluginContext<CoapConfig>
  endpoint: coap.CoapEndpoint
  counters: { notified: PluginCounter, notifyFailed: PluginCounter }
  /** the client ended (its link closed): the gateway forgets it */
  onEnd: (client: CoapClient, close: GatewayClose) => void
}

export interface Observation {
  readonly key: string
  readonly peer: coap.CoapPeer
  readonly token: Buffer
  readonly filter: string
  /** the registering request's URI key: Block2 follow-ups of large notifications come with it */
  readonly uriKey: string
  readonly szx: number
  /** 2.05 sent: notifications go out from now on */
  registered: boolean
  /** messages that came before the 2.05 went out (retained ones), sent right after it */
  early: Array<{ payload: Buffer, confirmable: boolean, done: () => void }>
}

/** messages held for an observation until its 2.05 went out; more are dropped */
const EARLY_MAX = 32
/** publishes awaiting the engine, and bytes waiting in the link, beyond which the client's next request is refused with 5.03 */
const BACKLOG_MAX = 256
const LINK_BYTES_MAX = 1024 * 1024

interface Filter { subscriptionId: number, observations: Set<Observation> }

/** The digest of a request's user name and password, compared in constant time. */
export function credentialDigest (username: string | undefined, password: string | undefined): Buffer {
  const hash = createHash('sha256')
  hash.update(username === undefined ? '\x00' : `\x01${username}`)
  hash.update('\x00')
  hash.update(password === undefined ? '\x00' : `\x01${password}`)
  return hash.digest()
}

export class CoapClient {
  readonly clientId: string
  readonly username: string | undefined
  readonly #digest: Buffer
  readonly #deps: ClientDeps
  readonly #gateway: GatewayClient
  readonly #observations = new Map<string, Observation>()
  readonly #filters = new Map<string, Filter>()
  readonly #bySubscription = new Map<number, string>()
  #nextSubscriptionId = 1
  #observeSeq = 1
  #lastSeen = Date.now()
  #keepalive: PluginTimer | undefined
  #closed = false
  /** the link counts bytes once it exists; before the CONNACK none are counted */
  #counting = false

  constructor (clientId: string, username: string | undefined, digest: Buffer, peer: coap.CoapPeer, deps: ClientDeps) {
    this.clientId = clientId
    this.username = username
    this.#digest = digest
    this.#deps = deps
    const link = deps.ctx.gateway.connect({
      protocol: PROTOCOL,
      listener: LISTENER_ID,
      ipAddress: plainAddress(peer.address),
      port: peer.port,
      protoName: 'CoAP',
      protoVer: 1
    })
    this.#linkBytes = () => link.stream.writableLength
    this.#countBytes = (received, sent) => { if (this.#counting && deps.ctx.config['coap.enable_stats']) link.countBytes(received, sent) }
    this.#gateway = new GatewayClient(link, deps.ctx.timers, {
      onMessage: (message, ack) => this.#message(message, ack),
      onClose: (close) => this.#end(close)
    })
  }

  readonly #countBytes: (received: number, sent: number) => void
  readonly #linkBytes: () => number

  /** The engine is behind with this client's messages: a flood of requests is refused (5.03) rather than buffered without bound. */
  get congested (): boolean {
    return this.#gateway.backlog >= BACKLOG_MAX || this.#linkBytes() >= LINK_BYTES_MAX
  }

  get open (): boolean {
    return !this.#closed && this.#gateway.open
  }

  get observations (): number {
    return this.#observations.size
  }

  matches (digest: Buffer): boolean {
    return timingSafeEqual(this.#digest, digest)
  }

  async connect (password: string | undefined): Promise<GatewayConnack> {
    const keepalive = Math.max(1, Math.round(this.#deps.ctx.config['coap.keepalive'] / 1000))
    const connack = await this.#gateway.connect({ clientId: this.clientId, username: this.username, password, keepalive })
    if (connack.reasonCode === 0) {
      this.#counting = true
      this.#armKeepalive()
    }
    return connack
  }

  /** A request of this client came (`bytes` on the wire, with its answer's). */
  touch (received: number, sent: number): void {
    this.#lastSeen = Date.now()
    this.#countBytes(received, sent)
  }

  /** A normal DISCONNECT: the engine ends the link (onEnd follows). */
  disconnect (): void {
    this.#gateway.disconnect()
  }

  /** Publishes; resolves with the engine's answer (≥ 0x80 refused). */
  async publish (message: { topic: string, payload: Buffer, qos: QoS, retain: boolean }): Promise<number> {
    return await this.#gateway.publish(message)
  }

  // ---- observations -----------------------------------------------------------

  /**
   * Registers (or renews: same peer and token) an observation of `filter`,
   * subscribing to it when the client has no other. Resolves with the
   * SUBACK code (≥ 0x80: refused, nothing kept), or 'full'.
   */
  async observe (request: coap.CoapRequest, filter: string): Promise<number | 'full'> {
    const key = `${coap.peerKey(request.peer)}|${request.message.token.toString('hex')}`
    const existing = this.#observations.get(key)
    if (existing !== undefined && existing.filter === filter) return 0
    if (existing !== undefined) this.#forget(existing)
    if (this.#observations.size >= this.#deps.ctx.config['coap.max_observations']) return 'full'
    const observation: Observation = {
      key,
      peer: request.peer,
      token: Buffer.from(request.message.token),
      filter,
      uriKey: request.uriKey,
      szx: request.block2Szx ?? coap.MAX_SZX,
      registered: false,
      early: []
    }
    this.#observations.set(key, observation)
    let entry = this.#filters.get(filter)
    if (entry !== undefined) {
      entry.observations.add(observation)
      return 0
    }
    entry = { subscriptionId: this.#subscriptionId(), observations: new Set([observation]) }
    this.#filters.set(filter, entry)
    this.#bySubscription.set(entry.subscriptionId, filter)
    const [code] = await this.#gateway.subscribe([{ topic: filter, qos: 1 }], entry.subscriptionId)
    if ((code ?? 0x80) >= 0x80) this.#forget(observation)
    return code ?? 0x80
  }

  /** The 2.05 of the registration went out: notifications may follow, numbered after it. */
  registered (request: coap.CoapRequest): number | undefined {
    const observation = this.#observations.get(`${coap.peerKey(request.peer)}|${request.message.token.toString('hex')}`)
    if (observation === undefined) return undefined
    observation.registered = true
    const early = observation.early.splice(0)
    // after the 2.05 (sent by the caller in this tick), in their order
    if (early.length > 0) {
      queueMicrotask(() => {
        for (const held of early) this.#notify(observation, held.payload, held.confirmable).then(held.done, held.done)
      })
    }
    return this.#nextSeq()
  }

  /**
   * GET with Observe=1: ends the client's observations of `filter`, from
   * whichever address (as EMQ X: the topic is unsubscribed), and the one of
   * the request's own token (RFC 7641 §3.6).
   */
  cancel (request: coap.CoapRequest, filter: string): void {
    const byToken = this.#observations.get(`${coap.peerKey(request.peer)}|${request.message.token.toString('hex')}`)
    if (byToken !== undefined) this.#forget(byToken)
    for (const observation of [...this.#filters.get(filter)?.observations ?? []]) this.#forget(observation)
  }

  #forget (observation: Observation): void {
    if (this.#observations.get(observation.key) !== observation) return
    this.#observations.delete(observation.key)
    for (const held of observation.early.splice(0)) held.done()
    const entry = this.#filters.get(observation.filter)
    if (entry === undefined) return
    entry.observations.delete(observation)
    if (entry.observations.size > 0) return
    this.#filters.delete(observation.filter)
    this.#bySubscription.delete(entry.subscriptionId)
    if (this.open) this.#gateway.unsubscribe([observation.filter]).catch(() => { /* the link closed: nothing to undo */ })
  }

  #subscriptionId (): number {
    for (;;) {
      const id = this.#nextSubscriptionId
      this.#nextSubscriptionId = id >= 268_435_455 ? 1 : id + 1
      if (!this.#bySubscription.has(id)) return id
    }
  }

  #nextSeq (): number {
    this.#observeSeq = this.#observeSeq >= OBSERVE_MAX ? 1 : this.#observeSeq + 1
    return this.#observeSeq
  }

  // ---- notifications ------------------------------------------------------------

  #message (message: GatewayMessage, ack: (reasonCode?: number) => void): void {
    const targets = new Set<Observation>()
    const filters = message.subscriptionIds.length > 0
      ? message.subscriptionIds.flatMap((id) => this.#bySubscription.get(id) ?? [])
      : [...this.#filters.keys()].filter((filter) => topicMatches(filter, message.topic))
    for (const filter of filters) for (const observation of this.#filters.get(filter)?.observations ?? []) targets.add(observation)
    if (targets.size === 0) {
      ack()
      return
    }
    const confirmable = message.qos > 0
    let pending = targets.size
    const done = (): void => { if (--pending === 0) ack() }
    for (const observation of targets) {
      if (observation.registered) {
        this.#notify(observation, message.payload, confirmable).then(done, done)
      } else if (observation.early.length < EARLY_MAX) {
        observation.early.push({ payload: message.payload, confirmable, done })
      } else {
        this.#deps.counters.notifyFailed.inc()
        done()
      }
    }
  }

  async #notify (observation: Observation, payload: Buffer, confirmable: boolean): Promise<void> {
    const outcome = await this.#deps.endpoint.send(observation.peer, {
      type: confirmable ? coap.TYPE.CON : coap.TYPE.NON,
      code: coap.CODE.CONTENT,
      token: observation.token,
      options: [{ number: coap.OPTION.CONTENT_FORMAT, value: coap.uintOption(OCTET_STREAM) }],
      payload
    }, {
      szx: observation.szx,
      block2Key: observation.uriKey,
      observe: () => this.#nextSeq(),
      // a NON notification answered with RST: the client is no longer interested (RFC 7641 §3.6)
      onReset: () => this.#forget(observation)
    })
    this.#countBytes(0, payload.length)
    switch (outcome.kind) {
      case 'ack': case 'sent':
        this.#deps.counters.notified.inc()
        if (outcome.kind === 'ack') this.#lastSeen = Date.now()
        return
      default:
        // reset, not acknowledged, or no room: the observer is removed (RFC 7641 §4.5)
        this.#deps.counters.notifyFailed.inc()
        if (outcome.kind !== 'dropped') this.#forget(observation)
    }
  }

  // ---- keep-alive and the end -------------------------------------------------------

  #armKeepalive (): void {
    const keepalive = this.#deps.ctx.config['coap.keepalive']
    const due = this.#lastSeen + keepalive - Date.now()
    this.#keepalive = this.#deps.ctx.timers.setTimeout(() => { this.#checkKeepalive() }, Math.max(50, due))
  }

  #checkKeepalive (): void {
    if (this.#closed) return
    if (Date.now() - this.#lastSeen < this.#deps.ctx.config['coap.keepalive']) {
      this.#armKeepalive()
      return
    }
    // silent: an observer is asked with a CoAP ping (Empty CON) whether it is still there
    const peers = new Map([...this.#observations.values()].map((o) => [coap.peerKey(o.peer), o.peer]))
    if (peers.size === 0) {
      this.disconnect()
      return
    }
    Promise.all([...peers.values()].map(async (peer) => await this.#deps.endpoint.ping(peer))).then((answers) => {
      if (this.#closed) return
      if (answers.some((answered) => answered)) {
        this.#lastSeen = Date.now()
        this.#armKeepalive()
      } else {
        this.disconnect()
      }
    }, () => this.disconnect())
  }

  #end (close: GatewayClose): void {
    if (this.#closed) return
    this.#closed = true
    this.#keepalive?.cancel()
    const observations = [...this.#observations.values()]
    for (const observation of observations) observation.early.splice(0)
    this.#observations.clear()
    this.#filters.clear()
    this.#bySubscription.clear()
    // each observer is told its observation ended: a notification with a 5.03 ends it (RFC 7641 §3.2)
    if (close.reason !== 'closed' && close.reason !== 'success') {
      for (const observation of observations) {
        this.#deps.endpoint.send(observation.peer, {
          type: coap.TYPE.NON,
          code: coap.CODE.SERVICE_UNAVAILABLE,
          token: observation.token,
          payload: Buffer.from(`the connection to the broker closed: ${close.reason}`)
        }).catch(() => {})
      }
    }
    this.#deps.onEnd(this, close)
  }
}
