// How events go from the node's event loop to the delivery thread: written
// as bytes, one after the other, into one buffer per batch, which is then
// transferred (not copied) in one message. The event loop writes an event's
// fields and nothing more, so that serving MQTT pays little for each one; the
// thread writes the HTTP requests. Strings go over as their JSON text in
// UTF-8 (`null` for none): an ASCII string with nothing to escape, the usual
// client id or topic, is written a character at a time with no string made.
//
// A record: u8 kind, u32 size (what the event holds while it waits, for
// web.hook.queue_bytes), the JSON text of its client id (the key: events of
// one client are posted in order), then
//   kind 0, any event: u32 length, its JSON body;
//   kind 1, message.publish: the JSON texts of its username and topic, u8 qos,
//     u8 retain, f64 ts (ms), u32 length, the payload's bytes.
// A JSON text is a u32 length and its bytes. Numbers are little-endian.
//
// `readBatch` runs on the thread, started from its source text like
// `deliveryThread` (thread.ts): it reaches nothing outside its parameters.

import type { MessageInfo } from '../../lib/plugin-kit/index.js'

const BODY = 0
const PUBLISH = 1
const QUOTE = 0x22
const NULL = Buffer.from('null', 'latin1')
/** a batch's first buffer; it doubles as a batch needs, and the next starts at the size the last one reached */
const FIRST_BYTES = 16 * 1024

/** Events written for the thread since the last `take`. */
export class Batch {
  #bytes = Buffer.from(new ArrayBuffer(FIRST_BYTES))
  #at = 0
  /** events written and their sizes */
  events = 0
  size = 0

  /** An event whose JSON body is written here. */
  body (key: string, size: number, body: string): void {
    this.#head(BODY, key, size)
    this.#room(body.length * 3 + 4)
    const length = this.#bytes.write(body, this.#at + 4)
    this.#u32(length)
    this.#at += length
  }

  /** A message.publish: its fields, its publisher the key; `ts` in ms. */
  publish (size: number, message: MessageInfo, username: string | null, ts: number): void {
    this.#head(PUBLISH, message.from ?? null, size)
    this.#json(username)
    this.#json(message.topic)
    const payload = message.payload
    this.#room(14 + payload.length)
    const bytes = this.#bytes
    bytes[this.#at] = message.qos
    bytes[this.#at + 1] = message.retain ? 1 : 0
    bytes.writeDoubleLE(ts, this.#at + 2)
    this.#at += 10
    this.#u32(payload.length)
    bytes.set(payload, this.#at)
    this.#at += payload.length
  }

  /** The batch's bytes (a buffer of its own, to transfer) and how many; the next event starts another batch. */
  take (): { bytes: ArrayBuffer, length: number, events: number, size: number } {
    const taken = { bytes: this.#bytes.buffer, length: this.#at, events: this.events, size: this.size }
    this.#bytes = Buffer.from(new ArrayBuffer(Math.max(FIRST_BYTES, this.#at)))
    this.#at = 0
    this.events = 0
    this.size = 0
    return taken
  }

  #head (kind: number, key: string | null, size: number): void {
    this.#room(5)
    this.#bytes[this.#at] = kind
    this.#bytes.writeUInt32LE(size, this.#at + 1)
    this.#at += 5
    this.#json(key)
    this.events++
    this.size += size
  }

  /** Writes a u32 at the end of the batch (a length: its bytes follow). */
  #u32 (value: number): void {
    this.#bytes.writeUInt32LE(value, this.#at)
    this.#at += 4
  }

  /** The JSON text of a string, or null. */
  #json (value: string | null): void {
    if (value === null) {
      this.#room(8)
      this.#u32(4)
      this.#bytes.set(NULL, this.#at)
      this.#at += 4
      return
    }
    const length = value.length
    // JSON.stringify writes at most 6 characters for one, each at most 3 bytes when not escaped
    this.#room(length * 6 + 6)
    const bytes = this.#bytes
    const start = this.#at + 4
    bytes[start] = QUOTE
    let at = start + 1
    let plain = true
    for (let i = 0; i < length; i++) {
      const code = value.charCodeAt(i)
      // a control character, `"`, `\` or past ASCII: JSON.stringify writes it
      if (code < 0x20 || code === QUOTE || code === 0x5c || code > 0x7e) {
        plain = false
        break
      }
      bytes[at++] = code
    }
    if (plain) bytes[at++] = QUOTE
    else at = start + bytes.write(JSON.stringify(value), start)
    this.#u32(at - start)
    this.#at = at
  }

  /** Room for `bytes` more: a buffer twice as large, the batch so far copied, when it has not. */
  #room (bytes: number): void {
    const old = this.#bytes
    if (old.length - this.#at >= bytes) return
    this.#bytes = Buffer.from(new ArrayBuffer(Math.max(old.length * 2, this.#at + bytes)))
    old.copy(this.#bytes, 0, 0, this.#at)
  }
}

/** What the thread does with each event of a batch, in order; strings are JSON texts read as latin1 (one character a byte: what goes on the wire). */
export interface BatchReader {
  body: (key: string, size: number, body: string) => void
  publish: (key: string, size: number, username: string, topic: string, qos: number, retain: boolean, ts: number, payloadStart: number, payloadEnd: number) => void
}

/** Reads the events of a batch written by `Batch` (`bytes` over the transferred buffer). */
export function readBatch (bytes: Buffer, length: number, reader: BatchReader): void {
  let at = 0
  const text = (): string => {
    const end = at + 4 + bytes.readUInt32LE(at)
    const value = bytes.toString('latin1', at + 4, end)
    at = end
    return value
  }
  while (at < length) {
    const kind = bytes[at]
    const size = bytes.readUInt32LE(at + 1)
    at += 5
    const key = text()
    if (kind === 0) {
      reader.body(key, size, text())
      continue
    }
    const username = text()
    const topic = text()
    const qos = bytes[at]
    const retain = bytes[at + 1] === 1
    const ts = bytes.readDoubleLE(at + 2)
    const payloadStart = at + 14
    at = payloadStart + bytes.readUInt32LE(at + 10)
    reader.publish(key, size, username, topic, qos, retain, ts, payloadStart, at)
  }
}
