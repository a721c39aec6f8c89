// The MQTT-SN gateway's UDP socket: each datagram is checked (size,
// decoding) and handed to the session of its sender's address, or, from an
// address with no session, answered here: SEARCHGW → GWINFO (at most
// GWINFO_PER_SECOND), CONNECT → a new session (up to
// mqtt.sn.max_connections), PUBLISH at QoS −1 → the QoS −1 link. ADVERTISE
// goes out every mqtt.sn.advertise_duration. Whatever else is dropped and
// counted; nothing a datagram holds can throw out of here.
import { createSocket, type RemoteInfo, type Socket } from 'node:dgram'
import { isIPv6 } from 'node:net'
import { limitedLog, plainAddress, validTopicName, type ListenerRecord, type PluginContext, type PluginTimer } from '../../lib/plugin-kit/index.js'
import { decode, encode, RC, SnDecodeError, TOPIC, shortTopicName, type SnPacket } from './codec.js'
import type { SnCounters } from './counters.js'
import { QosMinusOnePublisher } from './qos-minus-one.js'
import { advertiseTarget, predefinedTopics, type SnConfig } from './settings.js'
import { PROTOCOL, SnSession, type ListenerCounts } from './session.js'

/** GWINFO answers (and CONNACK refusals over max_connections) per second, all senders together */
const GWINFO_PER_SECOND = 100
/** the socket's receive buffer asked of the OS (a burst of datagrams waits there) */
const RECEIVE_BUFFER = 4 * 1024 * 1024
/** at unload, how long the last datagrams (the clients' DISCONNECT) may take to go out */
const UNLOAD_FLUSH_MS = 1000

export class SnGateway {
  readonly #ctx: PluginContext<SnConfig>
  readonly #counters: SnCounters
  readonly #sessions = new Map<string, SnSession>()
  readonly #listener: ListenerCounts = { closed: 0, kicked: 0 }
  readonly #predefined
  #socket: Socket | undefined
  #port = 0
  #host = ''
  #advertising: PluginTimer | undefined
  #tokens = GWINFO_PER_SECOND
  #refilledAt = Date.now()
  #qosMinusOne: QosMinusOnePublisher | undefined
  readonly #sendFailed
  readonly #refused
  /** datagrams handed to the socket and not yet sent */
  #sending = 0
  #flushed: (() => void) | undefined

  constructor (ctx: PluginContext<SnConfig>, counters: SnCounters) {
    this.#ctx = ctx
    this.#counters = counters
    this.#predefined = predefinedTopics(ctx.config)
    this.#sendFailed = limitedLog((fields, message) => ctx.logger.warn(fields, message), { perWindow: 5, windowMs: 60_000 })
    // refused clients (a protocol error, bad credentials, an idle link): at warning, 20 a minute, the rest counted
    this.#refused = limitedLog((fields, message) => ctx.logger.warn(fields, message), { perWindow: 20, windowMs: 60_000 })
  }

  /** Binds the socket; resolves with the port. */
  async start (host: string, port: number): Promise<number> {
    const socket = createSocket({ type: isIPv6(host) ? 'udp6' : 'udp4', recvBufferSize: RECEIVE_BUFFER })
    this.#ctx.servers.add(socket)
    await new Promise<void>((resolve, reject) => {
      socket.once('error', (err: NodeJS.ErrnoException) => reject(Object.assign(new Error(`mqtt.sn.port: cannot listen on ${host}:${port} (${err.code ?? err.message})`), { code: err.code })))
      socket.bind(port, host, () => resolve())
    })
    socket.on('error', (err) => this.#ctx.logger.warn({ err }, 'MQTT-SN socket error'))
    socket.on('message', (datagram, from) => this.#datagram(datagram, from))
    this.#socket = socket
    this.#host = host
    this.#port = socket.address().port
    this.#qosMinusOne = new QosMinusOnePublisher(this.#ctx, host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host, (n) => this.#counters.messagesDropped.inc(n))
    // the plugin unloads: the clients are told (DISCONNECT) before the socket closes (releases run newest first)
    this.#ctx.onUnload(async () => await this.#stop())
    this.#advertise()
    this.#ctx.onSettingChange('mqtt.sn.advertise_duration', () => this.#advertise())
    this.#ctx.onSettingChange('mqtt.sn.advertise_to', () => this.#advertise())
    return this.#port
  }

  listenerRecord (): ListenerRecord {
    const { closed, kicked } = this.#listener
    return {
      protocol: PROTOCOL,
      listen_on: `${this.#host.includes(':') ? `[${this.#host}]` : this.#host}:${this.#port}`,
      acceptors: 1,
      max_conns: this.#ctx.config['mqtt.sn.max_connections'],
      current_conns: this.#sessions.size,
      shutdown_count: closed === 0 && kicked === 0 ? [] : { closed, kicked }
    }
  }

  /** The clients get their DISCONNECT before the socket closes: the sends are awaited (at most UNLOAD_FLUSH_MS). */
  async #stop (): Promise<void> {
    this.#advertising?.cancel()
    for (const session of [...this.#sessions.values()]) session.close()
    this.#sessions.clear()
    this.#qosMinusOne?.close()
    if (this.#sending === 0) return
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, UNLOAD_FLUSH_MS)
      this.#flushed = () => {
        clearTimeout(timer)
        resolve()
      }
    })
  }

  // ---- datagrams ------------------------------------------------------------

  #datagram (datagram: Buffer, from: RemoteInfo): void {
    if (datagram.length > this.#ctx.config['mqtt.sn.max_packet_size']) {
      this.#counters.tooLarge.inc()
      return
    }
    let packet: SnPacket
    try {
      packet = decode(datagram)
    } catch (err) {
      if (!(err instanceof SnDecodeError)) this.#ctx.logger.error({ err }, 'MQTT-SN decoding failed')
      this.#counters.malformed.inc()
      return
    }
    this.#counters.received.inc()
    try {
      this.#packet(packet, from, datagram.length)
    } catch (err) {
      // a bug here must not stop the socket: the packet is dropped
      this.#counters.dropped.inc()
      this.#ctx.logger.error({ err, type: packet.type }, 'MQTT-SN packet handling failed')
    }
  }

  #packet (packet: SnPacket, from: RemoteInfo, octets: number): void {
    if (packet.type === 'searchgw') {
      // answered whoever asks, at a bounded rate (a flood of SEARCHGW makes no state)
      if (this.#take()) this.#write({ type: 'gwinfo', gwId: this.#ctx.config['mqtt.sn.gateway_id'] }, from.address, from.port)
      else this.#counters.dropped.inc()
      return
    }
    if (packet.type === 'advertise' || packet.type === 'gwinfo') {
      // another gateway's: nothing to do
      return
    }
    const key = `${from.address}|${from.port}`
    const session = this.#sessions.get(key)
    if (session !== undefined) {
      session.packet(packet, octets)
      return
    }
    if (packet.type === 'connect') {
      if (this.#sessions.size >= this.#ctx.config['mqtt.sn.max_connections']) {
        this.#listener.closed++
        this.#counters.dropped.inc()
        if (this.#take()) this.#write({ type: 'connack', returnCode: RC.CONGESTION }, from.address, from.port)
        return
      }
      const created = this.#session(key, from)
      this.#sessions.set(key, created)
      created.packet(packet, octets)
      return
    }
    if (packet.type === 'publish' && packet.flags.qos === -1) {
      this.#qosMinusOnePublish(packet.flags.topicIdType, packet.topicId, packet.data, packet.flags.retain, octets)
      return
    }
    this.#counters.dropped.inc()
  }

  /** §6.8: QoS −1 from a client with no connection, to a predefined topic id or a short topic name. */
  #qosMinusOnePublish (topicIdType: number, topicId: number, payload: Buffer, retain: boolean, octets: number): void {
    const topic = !this.#ctx.config['mqtt.sn.enable_qos3']
      ? undefined
      : topicIdType === TOPIC.PREDEFINED ? this.#predefined.byId.get(topicId) : topicIdType === TOPIC.SHORT ? shortTopicName(topicId) : undefined
    if (topic === undefined || !validTopicName(topic) || this.#qosMinusOne?.publish(topic, payload, retain, octets) !== true) this.#counters.dropped.inc()
  }

  #session (key: string, from: RemoteInfo): SnSession {
    const address = from.address
    const port = from.port
    // the connection's address as listeners record it (an IPv4-mapped IPv6 address as IPv4)
    const session: SnSession = new SnSession(plainAddress(address), port, {
      ctx: this.#ctx,
      counters: this.#counters,
      listener: this.#listener,
      write: (bytes) => this.#send(bytes, address, port),
      encode: (packet) => this.#encode(packet),
      gone: () => { if (this.#sessions.get(key) === session) this.#sessions.delete(key) },
      refused: this.#refused
    })
    return session
  }

  // ---- sending --------------------------------------------------------------

  /** undefined: over mqtt.sn.max_packet_size (or 65535 octets) */
  #encode (packet: SnPacket): Buffer | undefined {
    try {
      const bytes = encode(packet)
      return bytes.length > this.#ctx.config['mqtt.sn.max_packet_size'] ? undefined : bytes
    } catch (err) {
      if (err instanceof RangeError) return undefined
      throw err
    }
  }

  #write (packet: SnPacket, address: string, port: number): void {
    const bytes = this.#encode(packet)
    if (bytes !== undefined) this.#send(bytes, address, port)
  }

  #send (bytes: Buffer, address: string, port: number): void {
    const socket = this.#socket
    if (socket === undefined) return
    this.#counters.sent.inc()
    try {
      this.#sending++
      socket.send(bytes, port, address, (err) => {
        if (--this.#sending === 0) this.#flushed?.()
        if (err !== null && err !== undefined) this.#sendFailed({ err, address, port }, 'MQTT-SN datagram not sent')
      })
    } catch (err) {
      this.#sending--
      // the socket closed (the plugin unloads)
      this.#sendFailed({ err, address, port }, 'MQTT-SN datagram not sent')
    }
  }

  /** One of GWINFO_PER_SECOND tokens. */
  #take (): boolean {
    const now = Date.now()
    this.#tokens = Math.min(GWINFO_PER_SECOND, this.#tokens + (now - this.#refilledAt) * GWINFO_PER_SECOND / 1000)
    this.#refilledAt = now
    if (this.#tokens < 1) return false
    this.#tokens--
    return true
  }

  // ---- ADVERTISE ------------------------------------------------------------

  /** ADVERTISE now and every mqtt.sn.advertise_duration (0: never). */
  #advertise (): void {
    this.#advertising?.cancel()
    this.#advertising = undefined
    const every = this.#ctx.config['mqtt.sn.advertise_duration']
    if (every === 0 || this.#socket === undefined) return
    const once = (): void => {
      const { host, port } = advertiseTarget(this.#ctx.config['mqtt.sn.advertise_to'], this.#port)
      try {
        this.#socket?.setBroadcast(true)
      } catch {
        // not every socket may broadcast (an IPv6 one): a unicast target still works
      }
      this.#write({ type: 'advertise', gwId: this.#ctx.config['mqtt.sn.gateway_id'], duration: Math.round(every / 1000) }, host, port)
    }
    once()
    this.#advertising = this.#ctx.timers.setInterval(once, every)
  }
}
