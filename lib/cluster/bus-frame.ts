// The cluster bus's frames: one Redis PUBLISH carries many messages, binary.
//   u8 version (1) | u8 kind | 8 bytes sender | u32 sequence | u32 count
//   then, for `messages`, count × (u32 length | msgpack of the packet)
// The sequence numbers a sender's message frames (a retried frame keeps its
// number, so a receiver that saw it once drops the copy); a control frame
// carries the sender's latest message frame number. `behind` and `resumed`
// say the sender's deliveries are behind (or caught up) and publishers on
// every node should wait; `hello` says the sender is on the bus (every node
// counts the others it hears), `bye` that it leaves it. `hello`, `behind` and
// `resumed` carry the sender's receipts instead of messages: count ×
// (u32 length = 12 | 8 bytes of another sender | u32 the frame number up to
// which the sender has every frame of that one).
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const msgpack = require('msgpack-lite') as { encode: (value: unknown) => Buffer, decode: (buffer: Buffer) => unknown }

const VERSION = 1
const HEADER = 18
export const SENDER_BYTES = 8

export const FRAME_KIND = { messages: 1, behind: 2, resumed: 3, hello: 4, bye: 5 } as const
export type FrameKind = keyof typeof FRAME_KIND
const KIND_NAMES = new Map<number, FrameKind>(Object.entries(FRAME_KIND).map(([name, code]) => [code, name as FrameKind]))

export interface Frame {
  kind: FrameKind
  /** the sending node's bus (random per process), hex */
  sender: string
  sequence: number
  /** the encoded messages (decode each with decodeMessage) */
  messages: Buffer[]
}

/**
 * A message: an engine PUBLISH of the usual shape (cmd, brokerId,
 * brokerCounter, topic, Buffer payload, qos, retain, dup, and perhaps
 * messageId and the publishing client's clientId, which the engine sets on
 * every client's PUBLISH) in the bus's own form, anything else in msgpack.
 *   u8 0xc1 (a byte msgpack never writes) | u8 flags (retain 1, dup 2, qos << 2,
 *   messageId key 16, messageId set 32, clientId 64) | f64 brokerCounter |
 *   u16 messageId | u16 brokerId length | u16 topic length | brokerId | topic |
 *   [u16 clientId length | clientId, with flag 64] | payload
 * msgpack-lite's generic walk was a tenth of a receiving node's time under a
 * cross-node flood (its string and object decoding) and its encoding a good
 * part of the sender's.
 */
export function encodeMessage (packet: object): Buffer {
  const size = publishSize(packet as Record<string, unknown>)
  if (size < 0) return msgpack.encode(packet)
  const out = Buffer.allocUnsafe(size)
  writePublish(packet as Record<string, unknown>, out, 0)
  return out
}

export function decodeMessage (encoded: Buffer): Record<string, unknown> {
  if (encoded.length > 0 && encoded[0] === OWN_FORM) return decodePublish(encoded)
  return msgpack.decode(encoded) as Record<string, unknown>
}

const OWN_FORM = 0xc1
const OWN_HEADER = 16
const PUBLISH_KEYS = new Set(['cmd', 'brokerId', 'brokerCounter', 'topic', 'payload', 'qos', 'retain', 'dup', 'messageId', 'clientId'])

/** The bytes of `packet` in the bus's own form, or -1 when it is not of that shape. */
function publishSize (packet: Record<string, unknown>): number {
  const { brokerId, brokerCounter, topic, payload, qos, retain, dup, messageId, clientId } = packet
  if (packet.cmd !== 'publish' || typeof brokerId !== 'string' || typeof topic !== 'string' || !Buffer.isBuffer(payload) ||
    typeof brokerCounter !== 'number' || !Number.isSafeInteger(brokerCounter) || (qos !== 0 && qos !== 1 && qos !== 2) ||
    typeof retain !== 'boolean' || typeof dup !== 'boolean') return -1
  const hasMessageId = 'messageId' in packet
  if (messageId !== undefined && (typeof messageId !== 'number' || !Number.isInteger(messageId) || messageId < 0 || messageId > 0xffff)) return -1
  const hasClientId = 'clientId' in packet
  if (hasClientId && typeof clientId !== 'string') return -1
  let keys = 0
  for (const key in packet) {
    if (!PUBLISH_KEYS.has(key)) return -1
    keys++
  }
  if (keys !== 8 + (hasMessageId ? 1 : 0) + (hasClientId ? 1 : 0)) return -1
  const idBytes = Buffer.byteLength(brokerId)
  const topicBytes = Buffer.byteLength(topic)
  const clientBytes = hasClientId ? Buffer.byteLength(clientId as string) : 0
  if (idBytes > 0xffff || topicBytes > 0xffff || clientBytes > 0xffff) return -1
  return OWN_HEADER + idBytes + topicBytes + (hasClientId ? 2 + clientBytes : 0) + payload.length
}

/** Writes `packet` (publishSize said it is of the shape) in the bus's own form at `at`; returns where it ends. */
function writePublish (packet: Record<string, unknown>, out: Buffer, at: number): number {
  const { brokerId, brokerCounter, topic, payload, qos, retain, dup, messageId, clientId } = packet as {
    brokerId: string, brokerCounter: number, topic: string, payload: Buffer, qos: number, retain: boolean, dup: boolean, messageId?: number, clientId?: string
  }
  const hasMessageId = 'messageId' in packet
  const hasClientId = 'clientId' in packet
  out[at] = OWN_FORM
  out[at + 1] = (retain ? 1 : 0) | (dup ? 2 : 0) | (qos << 2) | (hasMessageId ? 16 : 0) | (messageId !== undefined ? 32 : 0) | (hasClientId ? 64 : 0)
  out.writeDoubleBE(brokerCounter, at + 2)
  out.writeUInt16BE(messageId ?? 0, at + 10)
  const idEnd = at + OWN_HEADER + out.write(brokerId, at + OWN_HEADER, 'utf8')
  const topicEnd = idEnd + out.write(topic, idEnd, 'utf8')
  out.writeUInt16BE(idEnd - at - OWN_HEADER, at + 12)
  out.writeUInt16BE(topicEnd - idEnd, at + 14)
  let payloadAt = topicEnd
  if (hasClientId) {
    const clientBytes = out.write(clientId as string, topicEnd + 2, 'utf8')
    out.writeUInt16BE(clientBytes, topicEnd)
    payloadAt = topicEnd + 2 + clientBytes
  }
  return payloadAt + payload.copy(out, payloadAt)
}

function decodePublish (encoded: Buffer): Record<string, unknown> {
  if (encoded.length < OWN_HEADER) throw new Error('short bus message')
  const flags = encoded[1]
  const idEnd = OWN_HEADER + encoded.readUInt16BE(12)
  const topicEnd = idEnd + encoded.readUInt16BE(14)
  const hasClientId = (flags & 64) !== 0
  if (topicEnd + (hasClientId ? 2 : 0) > encoded.length || (flags & 0x0c) === 0x0c || (flags & 0x80) !== 0) throw new Error('malformed bus message')
  const clientEnd = hasClientId ? topicEnd + 2 + encoded.readUInt16BE(topicEnd) : topicEnd
  if (clientEnd > encoded.length) throw new Error('malformed bus message')
  const packet: Record<string, unknown> = {
    cmd: 'publish',
    brokerId: encoded.toString('utf8', OWN_HEADER, idEnd),
    brokerCounter: encoded.readDoubleBE(2),
    topic: encoded.toString('utf8', idEnd, topicEnd),
    payload: encoded.subarray(clientEnd),
    qos: (flags >> 2) & 3,
    retain: (flags & 1) !== 0,
    dup: (flags & 2) !== 0
  }
  // as msgpack had it: a messageId key without a value comes back null
  if ((flags & 16) !== 0) packet.messageId = (flags & 32) !== 0 ? encoded.readUInt16BE(10) : null
  if (hasClientId) packet.clientId = encoded.toString('utf8', topicEnd + 2, clientEnd)
  return packet
}

export interface Receipt {
  /** the sender whose frames were received, hex */
  sender: string
  /** every frame of that sender up to this number was received */
  upTo: number
}

export function encodeReceipt (sender: string, upTo: number): Buffer {
  const receipt = Buffer.alloc(SENDER_BYTES + 4)
  receipt.write(sender, 0, SENDER_BYTES, 'hex')
  receipt.writeUInt32BE(upTo >>> 0, SENDER_BYTES)
  return receipt
}

/** null for an entry that is not a receipt */
export function decodeReceipt (entry: Buffer): Receipt | null {
  if (entry.length !== SENDER_BYTES + 4) return null
  return { sender: entry.toString('hex', 0, SENDER_BYTES), upTo: entry.readUInt32BE(SENDER_BYTES) }
}

export function encodeFrame (kind: FrameKind, sender: Buffer, sequence: number, messages: Buffer[] = []): Buffer {
  let size = HEADER
  for (const m of messages) size += 4 + m.length
  const frame = Buffer.allocUnsafe(size)
  writeHeader(frame, kind, sender, sequence, messages.length)
  let at = HEADER
  for (const m of messages) {
    frame.writeUInt32BE(m.length, at)
    m.copy(frame, at + 4)
    at += 4 + m.length
  }
  return frame
}

function writeHeader (frame: Buffer, kind: FrameKind, sender: Buffer, sequence: number, count: number): void {
  frame.writeUInt8(VERSION, 0)
  frame.writeUInt8(FRAME_KIND[kind], 1)
  sender.copy(frame, 2, 0, SENDER_BYTES)
  frame.writeUInt32BE(sequence >>> 0, 10)
  frame.writeUInt32BE(count, 14)
}

/**
 * A message frame being filled: each message is written straight into one
 * reused buffer (no Buffer per message: under a flood their allocation and
 * garbage were a tenth of the sender's time); `finish` copies the frame out.
 */
const FRAME_BUFFER = 64 * 1024
const FRAME_BUFFER_KEPT = 1024 * 1024

export class FrameBuilder {
  #buffer = Buffer.allocUnsafeSlow(FRAME_BUFFER)
  #at = HEADER
  #count = 0

  /** messages added since the last finish */
  get count (): number { return this.#count }
  /** their bytes, framing included */
  get bytes (): number { return this.#at - HEADER }

  add (packet: object): void {
    const size = publishSize(packet as Record<string, unknown>)
    const encoded = size < 0 ? msgpack.encode(packet) : undefined
    const length = encoded?.length ?? size
    this.#reserve(4 + length)
    this.#buffer.writeUInt32BE(length, this.#at)
    if (encoded === undefined) writePublish(packet as Record<string, unknown>, this.#buffer, this.#at + 4)
    else encoded.copy(this.#buffer, this.#at + 4)
    this.#at += 4 + length
    this.#count++
  }

  /** The frame of the messages added (a Buffer of its own); the builder is empty again. */
  finish (kind: FrameKind, sender: Buffer, sequence: number): Buffer {
    writeHeader(this.#buffer, kind, sender, sequence, this.#count)
    const frame = Buffer.allocUnsafe(this.#at)
    this.#buffer.copy(frame, 0, 0, this.#at)
    this.#at = HEADER
    this.#count = 0
    // one huge message does not keep its buffer
    if (this.#buffer.length > FRAME_BUFFER_KEPT) this.#buffer = Buffer.allocUnsafeSlow(FRAME_BUFFER)
    return frame
  }

  #reserve (bytes: number): void {
    if (this.#at + bytes <= this.#buffer.length) return
    const grown = Buffer.allocUnsafeSlow(Math.max(this.#buffer.length * 2, this.#at + bytes))
    this.#buffer.copy(grown, 0, 0, this.#at)
    this.#buffer = grown
  }
}

/** True when `frame` was sent by `sender` (checked before decoding: every node hears its own frames back). */
export function sentBy (frame: Buffer, sender: Buffer): boolean {
  return frame.length >= HEADER && frame.compare(sender, 0, SENDER_BYTES, 2, 2 + SENDER_BYTES) === 0
}

/** null for anything that is not a well-formed frame of this version (another writer on the channel is ignored, not trusted). */
export function decodeFrame (frame: Buffer): Frame | null {
  if (frame.length < HEADER || frame.readUInt8(0) !== VERSION) return null
  const kind = KIND_NAMES.get(frame.readUInt8(1))
  if (kind === undefined) return null
  const count = frame.readUInt32BE(14)
  const messages: Buffer[] = []
  let at = HEADER
  for (let i = 0; i < count; i++) {
    if (at + 4 > frame.length) return null
    const length = frame.readUInt32BE(at)
    if (at + 4 + length > frame.length) return null
    messages.push(frame.subarray(at + 4, at + 4 + length))
    at += 4 + length
  }
  return { kind, sender: frame.toString('hex', 2, 2 + SENDER_BYTES), sequence: frame.readUInt32BE(10), messages }
}
