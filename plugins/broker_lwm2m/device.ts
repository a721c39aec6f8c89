// One registered LwM2M client (endpoint): its client of the broker (the
// kit's GatewayClient, client id = endpoint name, proto_name LwM2M), its
// lifetime, the commands it is sent from the command topic and their
// answers on the response topic, its observations and their notifications,
// and queue mode (binding UQ: commands wait for the device's next Update).
import { randomBytes } from 'node:crypto'
import type { Agent, IncomingMessage, ObserveReadStream, OutgoingMessage } from 'coap'
import { GatewayClient, GatewayLinkClosed, HeldBytes, type GatewayClose, type GatewayLink, type PluginContext, type PluginCounter, type PluginTimer } from '../../lib/plugin-kit/index.js'
import { answerMessage, codeMessage, parseCommand, type AnswerData, type Command, type Refusal } from './commands.js'
import { decodeContent, splitLinks } from './content.js'
import type { ObjectRegistry } from './objects.js'
import type { Registration, RegistrationUpdate } from './registration.js'
import type { Lwm2mConfig } from './settings.js'
import { ContentError, FORMAT, formatPath } from './values.js'

export const PROTOCOL = 'lwm2m:udp'
export const LISTENER_ID = 'lwm2m:udp:default'
/** observations one device may hold */
export const MAX_OBSERVATIONS = 64
/** commands sent to one device and not yet answered, at most (more wait, up to the queue bound) */
const MAX_IN_FLIGHT = 16
/** messages of one device awaiting the broker's PUBACK beyond which more are dropped (a device cannot be paused as a TCP peer can) */
const MAX_UPLINK_BACKLOG = 1024

export interface Lwm2mCounters {
  malformed: PluginCounter
  tooLarge: PluginCounter
  registered: PluginCounter
  expired: PluginCounter
  commands: PluginCounter
  refused: PluginCounter
  notifications: PluginCounter
  denied: PluginCounter
  dropped: PluginCounter
}

export interface DeviceDeps {
  ctx: PluginContext<Lwm2mConfig>
  agent: Agent
  registry: ObjectRegistry
  counters: Lwm2mCounters
  /** the device's registration ended (any reason): forget it */
  closed: (device: Device, reason: CloseReason) => void
}

export type CloseReason = 'deregistered' | 'expired' | 'replaced' | 'kicked' | 'link_closed' | 'refused'

interface Observation { token: Buffer, stream: ObserveReadStream }

/** EMQ X's content-format names → numbers (coap names the formats it knows). */
const FORMAT_NAMES: Readonly<Record<string, number>> = Object.freeze({
  'text/plain': FORMAT.text,
  'application/link-format': FORMAT.link,
  'application/octet-stream': FORMAT.opaque,
  'application/vnd.oma.lwm2m+tlv': FORMAT.tlv,
  'application/vnd.oma.lwm2m+json': FORMAT.json
})

export function formatNumber (value: unknown): number | undefined {
  if (typeof value === 'number') return value
  if (typeof value === 'string') return FORMAT_NAMES[value] ?? -1
  return undefined
}

export class Device {
  readonly ep: string
  readonly location: string
  address: string
  port: number
  registration: Registration
  link: GatewayLink | undefined
  readonly #deps: DeviceDeps
  readonly #ctx: PluginContext<Lwm2mConfig>
  #client: GatewayClient | undefined
  #lifetime: PluginTimer | undefined
  #awakeUntil = 0
  /** commands waiting: for a queue-mode device to wake, or for room in flight */
  readonly #queue: Command[] = []
  #inFlight = 0
  readonly #observations = new Map<string, Observation>()
  /** requests awaiting the device's answer, each with what ends its wait */
  readonly #pending = new Map<OutgoingMessage, () => boolean>()
  #closed = false
  readonly #bytes = new HeldBytes()

  constructor (deps: DeviceDeps, registration: Registration, address: string, port: number) {
    this.#deps = deps
    this.#ctx = deps.ctx
    this.ep = registration.ep
    this.location = randomBytes(6).toString('base64url')
    this.registration = registration
    this.address = address
    this.port = port
  }

  get open (): boolean {
    return !this.#closed
  }

  get queueMode (): boolean {
    return this.registration.b.includes('Q')
  }

  /** The device's topic for `key` (`lwm2m.topics.<key>` under the mountpoint, `%e` its endpoint name). */
  topic (key: 'command' | 'response' | 'notify' | 'register' | 'update'): string {
    return `${this.#ctx.config['lwm2m.mountpoint'].replaceAll('%e', this.ep)}${this.#ctx.config[`lwm2m.topics.${key}`]}`
  }

  countBytes (received: number, sent: number): void {
    this.#bytes.count(this.link, received, sent)
  }

  /**
   * Opens the device's client of the broker (the auth chain decides) and
   * subscribes it to its command topic (the ACL decides): undefined when
   * both went through, else the CoAP code to refuse the Register with.
   */
  async connect (): Promise<{ code: string, reason: string } | undefined> {
    const link = this.#ctx.gateway.connect({
      protocol: PROTOCOL,
      listener: LISTENER_ID,
      ipAddress: this.address,
      port: this.port,
      protoName: 'LwM2M',
      protoVer: this.registration.lwm2m
    })
    this.link = link
    this.#bytes.flushTo(link)
    const client = new GatewayClient(link, this.#ctx.timers, {
      onMessage: (message) => this.command(message.payload),
      onClose: (close) => this.#linkClosed(close)
    })
    this.#client = client
    try {
      const connack = await client.connect({ clientId: this.ep, keepalive: Math.min(0xffff, this.registration.lt) })
      if (connack.reasonCode !== 0) return { code: '4.03', reason: connack.reason }
      const [granted] = await client.subscribe([{ topic: this.topic('command'), qos: 0 }])
      if (granted === undefined || granted >= 0x80) {
        client.disconnect()
        return { code: '4.03', reason: granted === 0x87 ? `not authorized to subscribe to ${this.topic('command')}` : 'the command subscription was refused' }
      }
    } catch (err) {
      if (err instanceof GatewayLinkClosed) return { code: '5.03', reason: 'the broker closed the connection' }
      throw err
    }
    if (this.#closed) return { code: '5.03', reason: 'closed while registering' }
    this.#startLifetime()
    this.#wake()
    return undefined
  }

  /** The registration's own message (register / update) on its topic. */
  announce (msgType: 'register' | 'update'): void {
    const r = this.registration
    const data: Record<string, unknown> = { ep: r.ep, lt: r.lt, lwm2m: r.lwm2m, b: r.b, alternatePath: r.alternatePath, objectList: r.objectList }
    if (r.sms !== undefined) data.sms = r.sms
    this.#publish(msgType === 'register' ? 'register' : 'update', Buffer.from(JSON.stringify({ msgType, data })))
  }

  /** An Update: the new values, the lifetime restarted, a queue-mode device's waiting commands sent. */
  update (update: RegistrationUpdate, address: string, port: number): void {
    this.registration = { ...this.registration, ...update }
    this.address = address
    this.port = port
    this.#startLifetime()
    this.#wake()
  }

  /** Sends observe for each object instance the device registered (lwm2m.auto_observe); the Security object is never readable by a server. */
  autoObserve (): void {
    for (const path of this.registration.objectList) {
      if (path.split('/').length !== 3 || path.startsWith('/0/')) continue
      this.#submit({ reqID: null, msgType: 'observe', reqPath: path, request: { method: 'GET', path: path.slice(1).split('/').map(Number), observe: 0 } })
    }
  }

  // ---- commands --------------------------------------------------------------

  /** A command from the command topic. */
  command (payload: Buffer): void {
    if (this.#closed) return
    const command = parseCommand(payload, this.#deps.registry.typeOf)
    if (!('request' in command)) {
      this.#deps.counters.refused.inc()
      this.#refuse(command)
      return
    }
    this.#submit(command)
  }

  #submit (command: Command): void {
    if (this.#queueing() || this.#inFlight >= MAX_IN_FLIGHT) {
      if (this.#queue.length >= this.#ctx.config['lwm2m.qmode_max_commands']) {
        this.#deps.counters.refused.inc()
        this.#refuse({ reqID: command.reqID, msgType: command.msgType, reqPath: command.reqPath, code: '5.03', message: 'too many commands are waiting for this device' })
        return
      }
      this.#queue.push(command)
      return
    }
    this.#send(command)
  }

  #queueing (): boolean {
    return this.queueMode && Date.now() > this.#awakeUntil
  }

  #wake (): void {
    this.#awakeUntil = Date.now() + this.#ctx.config['lwm2m.qmode_time_window']
    this.#drain(true)
  }

  /** Sends waiting commands while there is room in flight (`awake`: the device just spoke, whatever the window). */
  #drain (awake = false): void {
    while (this.#queue.length > 0 && !this.#closed && (awake || !this.#queueing()) && this.#inFlight < MAX_IN_FLIGHT) this.#send(this.#queue.shift()!)
  }

  #refuse (refusal: Refusal): void {
    const data: AnswerData = { code: refusal.code, codeMsg: codeMessage(refusal.code), reason: refusal.message }
    if (refusal.reqPath !== undefined) data.reqPath = refusal.reqPath
    this.#publish('response', answerMessage(refusal.reqID, refusal.msgType, data))
  }

  #send (command: Command): void {
    const { request } = command
    const key = formatPath(request.path)
    if (request.observe === 0 && !this.#observations.has(key) && this.#observations.size >= MAX_OBSERVATIONS) {
      this.#refuse({ ...command, code: '5.03', message: `this device has ${MAX_OBSERVATIONS} observations already` })
      return
    }
    const existing = this.#observations.get(key)
    // a cancel carries the observation's token (RFC 7641 §3.6); a new observe of an observed path replaces it
    const token = request.observe === 1 && existing !== undefined ? existing.token : randomBytes(8)
    const root = this.registration.alternatePath === '/' ? '' : this.registration.alternatePath.replace(/\/$/, '')
    const req = this.#deps.agent.request({
      hostname: this.address,
      port: this.port,
      method: request.method,
      pathname: `${root}${key}`,
      ...(request.query === undefined ? {} : { query: request.query.join('&') }),
      ...(request.observe === undefined ? {} : { observe: request.observe }),
      ...(request.contentFormat === undefined ? {} : { contentFormat: request.contentFormat }),
      ...(request.accept === undefined ? {} : { accept: request.accept }),
      token,
      confirmable: true
    })
    this.#deps.counters.commands.inc()
    this.#inFlight++
    this.#pending.set(req, () => finish())
    let done = false
    const finish = (): boolean => {
      if (done) return false
      done = true
      timer.cancel()
      this.#pending.delete(req)
      this.#inFlight--
      return true
    }
    const timer = this.#ctx.timers.setTimeout(() => {
      if (!finish()) return
      this.#deps.agent.abort(req)
      this.#answer(command, { code: '5.04', codeMsg: codeMessage('5.04'), reqPath: command.reqPath, reason: 'the device did not answer' })
      this.#drain()
    }, this.#ctx.config['lwm2m.command_timeout'])
    req.on('error', () => {
      if (!finish()) return
      this.#answer(command, { code: '5.04', codeMsg: codeMessage('5.04'), reqPath: command.reqPath, reason: 'the device did not answer' })
      this.#drain()
    })
    req.on('response', (res: IncomingMessage) => {
      if (!finish()) return
      this.#response(command, res, token)
      this.#drain()
    })
    req.end(request.payload)
  }

  #response (command: Command, res: IncomingMessage, token: Buffer): void {
    if (this.#closed) return
    const { request } = command
    const key = formatPath(request.path)
    const code = String(res.code)
    const data = this.#answerData(command, code, res.payload, res.headers['Content-Format'])
    this.#answer(command, data)
    if (request.observe === 1) {
      this.#stopObserving(key)
      return
    }
    // coap hands an observe's answer as a stream of notifications (unless 4.04)
    if (request.observe !== 0 || typeof (res as unknown as { append?: unknown }).append !== 'function') return
    const stream = res as unknown as ObserveReadStream
    if (!code.startsWith('2.')) {
      stream.close()
      return
    }
    this.#stopObserving(key)
    this.#observations.set(key, { token, stream })
    let first = true
    stream.on('data', (payload: Buffer) => {
      // the first is the observe's own answer, published above
      if (first) {
        first = false
        return
      }
      if (this.#closed) return
      this.#deps.counters.notifications.inc()
      const notification = this.#answerData(command, String(stream.code), payload, stream.headers['Content-Format'])
      const seq = stream.headers.Observe
      this.#publish('notify', answerMessage(command.reqID, 'notify', notification, typeof seq === 'number' ? seq : 0))
    })
    stream.on('error', () => {})
  }

  #answerData (command: Command, code: string, payload: Buffer | undefined, format: unknown): AnswerData {
    const data: AnswerData = { code, codeMsg: codeMessage(code), reqPath: command.reqPath }
    const bytes = payload ?? Buffer.alloc(0)
    if (!code.startsWith('2.') || bytes.length === 0) return data
    if (command.msgType === 'discover') {
      data.content = splitLinks(bytes.toString('utf8'))
      return data
    }
    if (command.msgType !== 'read' && command.msgType !== 'observe') return data
    try {
      data.content = decodeContent(formatNumber(format), bytes, command.request.path, this.#deps.registry.typeOf)
    } catch (err) {
      if (!(err instanceof ContentError)) throw err
      // what the device sent cannot be read: said so, with its bytes
      data.reason = `the device's answer could not be read: ${err.message}`
      data.content = [{ path: command.reqPath, value: bytes.toString('base64') }]
    }
    return data
  }

  #answer (command: Command, data: AnswerData): void {
    this.#publish('response', answerMessage(command.reqID, command.msgType, data))
  }

  #stopObserving (key: string): void {
    const observation = this.#observations.get(key)
    if (observation === undefined) return
    this.#observations.delete(key)
    // the Agent forgets the token: a later notification is answered with RST, which ends it at the device
    observation.stream.close()
  }

  // ---- uplink ----------------------------------------------------------------

  #publish (key: 'response' | 'notify' | 'register' | 'update', payload: Buffer): void {
    const client = this.#client
    if (client === undefined || !client.open) return
    if (client.backlog >= MAX_UPLINK_BACKLOG) {
      this.#deps.counters.dropped.inc()
      return
    }
    const topic = this.topic(key)
    client.publish({ topic, payload, qos: 1 }).then((code) => {
      if (code >= 0x80) {
        this.#deps.counters.denied.inc()
        this.#ctx.logger.debug({ ep: this.ep, topic, code }, 'LwM2M message refused by the broker')
      }
    }, () => {
      // the link closed: #linkClosed ends the registration
    })
  }

  // ---- lifetime and closing ---------------------------------------------------

  #startLifetime (): void {
    this.#lifetime?.cancel()
    this.#lifetime = this.#ctx.timers.setTimeout(() => {
      this.#deps.counters.expired.inc()
      this.#ctx.logger.debug({ ep: this.ep }, 'LwM2M registration lifetime expired')
      this.close('expired')
    }, this.registration.lt * 1000)
  }

  #linkClosed (close: GatewayClose): void {
    if (this.#closed) return
    this.#client = undefined
    this.close(close.reason === 'administrative_action' ? 'kicked' : 'link_closed')
  }

  /** Ends the registration: timers, observations, commands in flight, the client of the broker (a normal DISCONNECT). */
  close (reason: CloseReason): void {
    if (this.#closed) return
    this.#closed = true
    this.#lifetime?.cancel()
    for (const key of [...this.#observations.keys()]) this.#stopObserving(key)
    for (const [req, finish] of this.#pending) {
      finish()
      this.#deps.agent.abort(req)
    }
    this.#pending.clear()
    this.#queue.length = 0
    this.#client?.disconnect()
    this.#deps.closed(this, reason)
  }
}
