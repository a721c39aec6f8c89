// The MongoDB wire protocol as far as the stand-in needs it: message framing,
// OP_MSG (2013) requests and replies, and the legacy OP_QUERY (2004) / OP_REPLY
// (1) pair a driver uses for its first handshake. No compression (the stand-in
// never advertises a compressor), no checksums are verified.
import { BSON, type Document } from 'mongodb'

export const OP_REPLY = 1
export const OP_QUERY = 2004
export const OP_MSG = 2013

const HEADER = 16
const MORE_TO_COME = 2
const CHECKSUM_PRESENT = 1

export interface Request {
  requestId: number
  /** true for OP_QUERY: the answer must be an OP_REPLY */
  legacy: boolean
  /** the database the command runs in (`$db`, or the OP_QUERY namespace's) */
  db: string
  command: Document
  /** OP_MSG moreToCome: the client expects no answer */
  noReply: boolean
}

/** Splits a byte stream into whole messages (each with its 16-byte header). */
export class MessageReader {
  #buffer: Buffer = Buffer.alloc(0)

  push (chunk: Buffer): Buffer[] {
    this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk])
    const messages: Buffer[] = []
    while (this.#buffer.length >= 4) {
      const length = this.#buffer.readInt32LE(0)
      if (length < HEADER || length > 48_000_000) throw new Error(`bad message length ${length}`)
      if (this.#buffer.length < length) break
      messages.push(this.#buffer.subarray(0, length))
      this.#buffer = this.#buffer.subarray(length)
    }
    return messages
  }
}

function cstring (buf: Buffer, at: number): [text: string, next: number] {
  const end = buf.indexOf(0, at)
  if (end < 0) throw new Error('unterminated cstring')
  return [buf.toString('utf8', at, end), end + 1]
}

function document (buf: Buffer, at: number): [doc: Document, next: number] {
  const size = buf.readInt32LE(at)
  return [BSON.deserialize(buf.subarray(at, at + size)), at + size]
}

/** Parses one whole message; throws on an opcode the stand-in does not speak. */
export function parseRequest (message: Buffer): Request {
  const requestId = message.readInt32LE(4)
  const opCode = message.readInt32LE(12)
  if (opCode === OP_QUERY) {
    const [ns, afterNs] = cstring(message, HEADER + 4)
    const [command] = document(message, afterNs + 8)
    return { requestId, legacy: true, db: ns.split('.')[0] ?? '', command, noReply: false }
  }
  if (opCode !== OP_MSG) throw new Error(`unsupported opcode ${opCode}`)
  const flags = message.readUInt32LE(HEADER)
  const end = message.length - ((flags & CHECKSUM_PRESENT) !== 0 ? 4 : 0)
  let at = HEADER + 4
  let body: Document | undefined
  const sequences: Record<string, Document[]> = {}
  while (at < end) {
    const kind = message[at++]
    if (kind === 0) {
      [body, at] = document(message, at)
    } else if (kind === 1) {
      const sectionEnd = at + message.readInt32LE(at)
      const [identifier, afterIdentifier] = cstring(message, at + 4)
      let next = afterIdentifier
      const docs: Document[] = []
      while (next < sectionEnd) {
        let doc: Document
        [doc, next] = document(message, next)
        docs.push(doc)
      }
      sequences[identifier] = docs
      at = sectionEnd
    } else {
      throw new Error(`unknown OP_MSG section kind ${kind}`)
    }
  }
  if (body === undefined) throw new Error('OP_MSG without a body section')
  const command = { ...body, ...sequences }
  return { requestId, legacy: false, db: String(command.$db ?? 'admin'), command, noReply: (flags & MORE_TO_COME) !== 0 }
}

let nextId = 1

function header (length: number, responseTo: number, opCode: number): Buffer {
  const head = Buffer.alloc(HEADER)
  head.writeInt32LE(length, 0)
  head.writeInt32LE(nextId++ & 0x7fffffff, 4)
  head.writeInt32LE(responseTo, 8)
  head.writeInt32LE(opCode, 12)
  return head
}

/** The answer to `request`: an OP_REPLY for OP_QUERY, else an OP_MSG with one body section. */
export function encodeReply (request: Request, reply: Document): Buffer {
  const doc = BSON.serialize(reply)
  if (request.legacy) {
    const fields = Buffer.alloc(20) // responseFlags, cursorID (int64), startingFrom, numberReturned
    fields.writeInt32LE(1, 16)
    return Buffer.concat([header(HEADER + 20 + doc.length, request.requestId, OP_REPLY), fields, doc])
  }
  const flagsAndKind = Buffer.alloc(5) // flagBits 0, section kind 0
  return Buffer.concat([header(HEADER + 5 + doc.length, request.requestId, OP_MSG), flagsAndKind, doc])
}
