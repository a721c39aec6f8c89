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

export const encodeMessage = (packet: object): Buffer => msgpack.encode(packet)

export const decodeMessage = (encoded: Buffer): Record<string, unknown> => msgpack.decode(encoded) as Record<string, unknown>

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
  frame.writeUInt8(VERSION, 0)
  frame.writeUInt8(FRAME_KIND[kind], 1)
  sender.copy(frame, 2, 0, SENDER_BYTES)
  frame.writeUInt32BE(sequence >>> 0, 10)
  frame.writeUInt32BE(messages.length, 14)
  let at = HEADER
  for (const m of messages) {
    frame.writeUInt32BE(m.length, at)
    m.copy(frame, at + 4)
    at += 4 + m.length
  }
  return frame
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
