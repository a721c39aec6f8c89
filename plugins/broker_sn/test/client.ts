// The MQTT-SN client of the tests: the plugin's own codec over a real UDP
// socket (there is no packaged MQTT-SN client). It records every packet it
// gets and waits for one by its type, with a generous deadline; a few
// helpers do the usual exchanges (CONNECT, REGISTER, SUBSCRIBE, acks).
import { createSocket, type Socket } from 'node:dgram'
import { once } from 'node:events'
import { decode, encode, flags, type Flags, type SnPacket, type SnType } from '../codec.js'

export const DEADLINE_MS = 15_000

type Of<T extends SnType> = SnPacket & { type: T }

export class SnClient {
  readonly socket: Socket
  readonly received: SnPacket[] = []
  /** datagrams that did not decode */
  readonly garbage: Buffer[] = []
  #waiters: Array<() => void> = []
  #msgId = 1
  /** answer PUBLISH QoS 1/2 and REGISTER by itself */
  autoAck = true

  private constructor (readonly port: number, readonly host = '127.0.0.1') {
    this.socket = createSocket('udp4')
    this.socket.on('message', (datagram) => {
      let packet: SnPacket
      try {
        packet = decode(datagram)
      } catch {
        this.garbage.push(datagram)
        return
      }
      this.received.push(packet)
      if (this.autoAck) this.#answer(packet)
      for (const wake of this.#waiters.splice(0)) wake()
    })
  }

  static async open (port: number, bindPort = 0): Promise<SnClient> {
    const client = new SnClient(port)
    client.socket.bind(bindPort, '127.0.0.1')
    await once(client.socket, 'listening')
    return client
  }

  get localPort (): number {
    return this.socket.address().port
  }

  nextMsgId (): number {
    return this.#msgId++
  }

  send (packet: SnPacket): void {
    this.raw(encode(packet))
  }

  raw (bytes: Buffer): void {
    this.socket.send(bytes, this.port, this.host)
  }

  /** The first packet of `type` (matching `match`) received from index `from` on. */
  async next<T extends SnType> (type: T, match: (p: Of<T>) => boolean = () => true, from = 0, ms = DEADLINE_MS): Promise<Of<T>> {
    return await this.nextOf([type], (p) => match(p as Of<T>), from, ms) as Of<T>
  }

  /** Sends and waits for the answer of `type` received after it. */
  async request<T extends SnType> (packet: SnPacket, type: T, match: (p: Of<T>) => boolean = () => true): Promise<Of<T>> {
    const from = this.received.length
    this.send(packet)
    return await this.next(type, match, from)
  }

  publishes (): Array<Of<'publish'>> {
    return this.received.filter((p): p is Of<'publish'> => p.type === 'publish')
  }

  async connect (clientId: string, options: { duration?: number, clean?: boolean } = {}): Promise<number> {
    const connack = await this.request({ type: 'connect', flags: flags({ cleanSession: options.clean ?? true }), protocolId: 1, duration: options.duration ?? 60, clientId }, 'connack')
    return connack.returnCode
  }

  async register (topicName: string): Promise<Of<'regack'>> {
    const msgId = this.nextMsgId()
    return await this.request({ type: 'register', topicId: 0, msgId, topicName }, 'regack', (p) => p.msgId === msgId)
  }

  async subscribe (topic: string | number, set: Partial<Flags> = {}): Promise<Of<'suback'>> {
    return await this.#topicRequest('subscribe', topic, set, 'suback')
  }

  async unsubscribe (topic: string | number, set: Partial<Flags> = {}): Promise<Of<'unsuback'>> {
    return await this.#topicRequest('unsubscribe', topic, set, 'unsuback')
  }

  /** SUBSCRIBE or UNSUBSCRIBE of a topic name (a string) or a topic id (a number), answered by `answer` with its MsgId. */
  async #topicRequest<T extends 'suback' | 'unsuback'> (type: 'subscribe' | 'unsubscribe', topic: string | number, set: Partial<Flags>, answer: T): Promise<Of<T>> {
    const msgId = this.nextMsgId()
    const packet: SnPacket = typeof topic === 'string'
      ? { type, flags: flags(set), msgId, topicName: topic }
      : { type, flags: flags(set), msgId, topicId: topic }
    return await this.request(packet, answer, (p) => p.msgId === msgId)
  }

  /** PUBLISH; QoS 1: resolves with the PUBACK; QoS 2: with the PUBREC (then PUBREL, PUBCOMP awaited) or the refusing PUBACK. */
  async publish (topicId: number, data: string | Buffer, set: Partial<Flags> = {}): Promise<SnPacket | undefined> {
    const qos = set.qos ?? 0
    const msgId = qos > 0 ? this.nextMsgId() : 0
    const packet: SnPacket = { type: 'publish', flags: flags(set), topicId, msgId, data: Buffer.from(data) }
    if (qos <= 0) {
      this.send(packet)
      return undefined
    }
    const from = this.received.length
    this.send(packet)
    const answer = await this.nextOf(['puback', 'pubrec'], (p) => 'msgId' in p && p.msgId === msgId, from)
    if (answer.type === 'pubrec') await this.request({ type: 'pubrel', msgId }, 'pubcomp', (p) => p.msgId === msgId)
    return answer
  }

  /** The first packet of one of `types` from index `from` on. */
  async nextOf (types: SnType[], match: (p: SnPacket) => boolean, from = 0, ms = DEADLINE_MS): Promise<SnPacket> {
    const deadline = Date.now() + ms
    for (;;) {
      const found = this.received.slice(from).find((p) => types.includes(p.type) && match(p))
      if (found !== undefined) return found
      const left = deadline - Date.now()
      if (left <= 0) throw new Error(`no ${types.join('/')} within ${ms} ms; got ${JSON.stringify(this.received.map((p) => p.type))}`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left)
        this.#waiters.push(() => { clearTimeout(timer); resolve() })
      })
    }
  }

  #answer (packet: SnPacket): void {
    if (packet.type === 'register') this.send({ type: 'regack', topicId: packet.topicId, msgId: packet.msgId, returnCode: 0 })
    if (packet.type === 'pubrel') this.send({ type: 'pubcomp', msgId: packet.msgId })
    if (packet.type !== 'publish') return
    if (packet.flags.qos === 1) this.send({ type: 'puback', topicId: packet.topicId, msgId: packet.msgId, returnCode: 0 })
    if (packet.flags.qos === 2) this.send({ type: 'pubrec', msgId: packet.msgId })
  }

  async close (): Promise<void> {
    await new Promise<void>((resolve) => this.socket.close(() => resolve()))
  }
}
