// A raw MQTT 3.1.1 (or 5) client on one TCP socket, built on mqtt-packet.
// The socket's bytes are cut into frames here so that PUBLISH frames can be
// counted without being decoded (`onPublishFrame`): at 100k+ messages/s a full
// parse would make the client, not the server, the thing being measured.
// Every other frame (and PUBLISH when there is no `onPublishFrame`) goes
// through the mqtt-packet parser.
import net from 'node:net'
import mqttPacket, { type Packet } from 'mqtt-packet'

const PUBLISH = 3

export interface ClientOptions {
  port: number
  clientId: string
  keepalive?: number
  /** 4 (MQTT 3.1.1, the default) or 5 */
  protocolVersion?: 4 | 5
  /** false: a persistent session (v5: Session Expiry Interval 3600 s) */
  clean?: boolean
  /** MQTT 5 CONNECT properties, e.g. topicAliasMaximum, maximumPacketSize */
  properties?: mqttPacket.IConnectPacket['properties']
  /** source address of the socket (e.g. one of 127.0.0.x); default: the system's choice */
  localAddress?: string
  /** Counts a PUBLISH frame without decoding it (the frame is a view into the read buffer, valid during the call). */
  onPublishFrame?: (frame: Buffer) => void
  /** Each decoded packet, after the connect/subscribe waiters have seen it. */
  onPacket?: (packet: Packet) => void
  /** After each chunk of bytes read from the socket. */
  onChunk?: () => void
  /** The connection ended although close() was not called. */
  onLost?: (err: Error) => void
}

export class RawClient {
  readonly socket: net.Socket
  private readonly opts: ClientOptions
  private readonly parser: ReturnType<typeof mqttPacket.parser>
  private readonly version: 4 | 5
  private pending: Buffer | null = null
  private waiter: { cmd: string, resolve: (p: Packet) => void, reject: (e: Error) => void } | null = null
  private closing = false

  private constructor (opts: ClientOptions) {
    this.opts = opts
    this.version = opts.protocolVersion ?? 4
    this.parser = mqttPacket.parser({ protocolVersion: this.version })
    this.socket = net.connect({ port: opts.port, host: '127.0.0.1', localAddress: opts.localAddress })
    this.socket.setNoDelay(true)
    this.socket.on('data', (chunk: Buffer) => this.onData(chunk))
    this.parser.on('packet', (packet: Packet) => {
      const w = this.waiter
      if (w !== null && w.cmd === packet.cmd) {
        this.waiter = null
        w.resolve(packet)
      }
      opts.onPacket?.(packet)
    })
    this.parser.on('error', (err: Error) => this.socket.destroy(err))
    this.socket.on('error', () => { /* reported by 'close' */ })
    this.socket.on('close', () => {
      const err = new Error(`${opts.clientId}: connection closed by the server`)
      this.waiter?.reject(err)
      this.waiter = null
      if (!this.closing) opts.onLost?.(err)
    })
  }

  /** Connects (a clean session unless `clean` is false) and resolves on a successful CONNACK. */
  static async connect (opts: ClientOptions, timeoutMs = 10_000): Promise<RawClient> {
    const client = new RawClient(opts)
    const clean = opts.clean ?? true
    const properties = client.version === 5 && !clean ? { sessionExpiryInterval: 3600, ...opts.properties } : opts.properties
    client.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: client.version, clean, clientId: opts.clientId, keepalive: opts.keepalive ?? 60, properties })
    try {
      const connack = await client.next('connack', timeoutMs)
      const code = connack.cmd === 'connack' ? connack.returnCode ?? connack.reasonCode ?? 0 : 0
      if (code !== 0) throw new Error(`${opts.clientId}: CONNACK return code ${code}`)
    } catch (err) {
      client.close()
      throw err
    }
    return client
  }

  async subscribe (topic: string, qos: 0 | 1, timeoutMs = 10_000): Promise<void> {
    await this.subscribeAll([topic], qos, timeoutMs)
  }

  /** One SUBSCRIBE with every filter; throws unless each is granted `qos`. */
  async subscribeAll (topics: string[], qos: 0 | 1, timeoutMs = 10_000): Promise<void> {
    this.send({ cmd: 'subscribe', messageId: 1, subscriptions: topics.map((topic) => ({ topic, qos })) })
    const suback = await this.next('suback', timeoutMs)
    const refused = suback.cmd === 'suback' ? suback.granted.findIndex((g) => g !== qos) : -1
    if (suback.cmd === 'suback' && (refused >= 0 || suback.granted.length !== topics.length)) {
      throw new Error(`${this.opts.clientId}: SUBACK granted ${String(suback.granted[refused])} for ${topics[refused]} (${suback.granted.length} codes for ${topics.length} filters)`)
    }
  }

  send (packet: Packet): boolean {
    return this.socket.write(mqttPacket.generate(packet, { protocolVersion: this.version }))
  }

  write (bytes: Buffer): boolean {
    return this.socket.write(bytes)
  }

  close (): void {
    this.closing = true
    this.socket.destroy()
  }

  private async next (cmd: string, timeoutMs: number): Promise<Packet> {
    return await new Promise<Packet>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiter = null
        reject(new Error(`${this.opts.clientId}: no ${cmd.toUpperCase()} within ${timeoutMs} ms`))
      }, timeoutMs)
      this.waiter = {
        cmd,
        resolve: (p) => { clearTimeout(timer); resolve(p) },
        reject: (e) => { clearTimeout(timer); reject(e) }
      }
    })
  }

  /** Splits the stream at MQTT frame boundaries: fixed header byte, 1-4 byte remaining length, body. */
  private onData (chunk: Buffer): void {
    const buf = this.pending === null ? chunk : Buffer.concat([this.pending, chunk])
    let off = 0
    while (buf.length - off >= 2) {
      let len = 0
      let i = off + 1
      let complete = false
      for (let mul = 1; i < buf.length && i < off + 5; i++, mul *= 128) {
        len += (buf[i] & 0x7f) * mul
        if ((buf[i] & 0x80) === 0) { complete = true; i++; break }
      }
      if (!complete) {
        if (i >= off + 5) { this.socket.destroy(new Error('malformed remaining length')); return }
        break
      }
      const end = i + len
      if (end > buf.length) break
      if (buf[off] >> 4 === PUBLISH && this.opts.onPublishFrame !== undefined) this.opts.onPublishFrame(buf.subarray(off, end))
      else this.parser.parse(buf.subarray(off, end))
      off = end
    }
    this.pending = off === buf.length ? null : buf.subarray(off)
    this.opts.onChunk?.()
  }
}

/** `count` copies of one QoS 0 PUBLISH, back to back: written with one socket.write. */
export function publishBatch (topic: string, payload: Buffer, count: number): Buffer {
  const one = mqttPacket.generate({ cmd: 'publish', topic, payload, qos: 0, dup: false, retain: false })
  return Buffer.concat(Array.from({ length: count }, () => one))
}

/** The packet identifier of a QoS 1 or 2 PUBLISH frame (MQTT 3.1.1); undefined at QoS 0. */
export function publishFrameId (frame: Buffer): number | undefined {
  if ((frame[0] & 0x06) === 0) return undefined
  let at = 1
  while ((frame[at] & 0x80) !== 0) at++
  at++
  const topicLength = frame.readUInt16BE(at)
  return frame.readUInt16BE(at + 2 + topicLength)
}

/** One PUBACK frame per identifier, back to back: written with one socket.write. */
export function pubackBatch (ids: number[]): Buffer {
  const out = Buffer.allocUnsafe(ids.length * 4)
  ids.forEach((id, i) => {
    out[i * 4] = 0x40
    out[i * 4 + 1] = 0x02
    out.writeUInt16BE(id, i * 4 + 2)
  })
  return out
}

/**
 * `count` QoS 1 PUBLISHes of one topic whose packet identifiers the caller
 * sets: `next()` returns the batch with the following `count` identifiers
 * (1–65535, wrapping), written in place in a fresh copy.
 */
export function qos1Batches (topic: string, payload: Buffer, count: number): () => Buffer {
  const one = mqttPacket.generate({ cmd: 'publish', topic, payload, qos: 1, messageId: 1, dup: false, retain: false })
  const idAt = one.length - payload.length - 2
  const template = Buffer.concat(Array.from({ length: count }, () => one))
  let id = 0
  return () => {
    const batch = Buffer.from(template)
    for (let i = 0; i < count; i++) {
      id = (id % 65535) + 1
      batch.writeUInt16BE(id, i * one.length + idAt)
    }
    return batch
  }
}
