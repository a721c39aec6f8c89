// How events go from the node's event loop to the delivery thread: written
// as bytes, one after the other, into one buffer per batch, which is then
// transferred (not copied) in one message. The event loop writes an event's
// fields and nothing more, so that serving MQTT pays little for each one; the
// thread writes the HTTP requests. Strings go over as their JSON text in
// UTF-8 (`null` for none): an ASCII string with nothing to escape, the usual
// client id or topic, is written a character at a time with no string made.
//
// A record: u8 kind, u32 size (what the event holds while it waits, for
// web.hook.queue_bytes), then
//   kind 0, any event: the JSON text of its client id (the key: events of one
//     client are posted in order), u32 length, its JSON body;
//   kind 1, message.publish: the JSON texts of its client id, username and
//     topic, u8 qos, u8 retain, f64 ts (ms), u32 length, the payload's bytes;
//   kind 2, a message.publish with the client id, username and topic of the
//     batch's kind 1 record number n (from 0): u32 n, then as kind 1 from the qos
//     (a device publishing again and again to its topic: its texts go once a batch).
// A JSON text is a u32 length and its bytes. Numbers are little-endian.
//
// `readBatch` runs on the thread, started from its source text like
// `deliveryThread` (thread.ts): it reaches nothing outside its parameters.

import type { MessageInfo } from '../../lib/plugin-kit/index.js'

const BODY = 0
const PUBLISH = 1
const REPEAT = 2
const QUOTE = 0x22
const NULL = Buffer.from('null', 'latin1')
/** a batch's first buffer; it doubles as a batch needs, and the next starts at the size the last one reached */
const FIRST_BYTES = 16 * 1024

/** Bytes the JSON text of a string (or null) may take in a record: its u32 length, and at most 6 bytes a character (JSON.stringify writes at most 6 characters for one, each at most 3 bytes when not escaped) and its quotes. */
const jsonRoom = (value: string | null): number => value === null ? 8 : value.length * 6 + 6

/** The client id, user name and topic of a connection's last message.publish with texts (kind 1), and which record that was. */
interface PublisherText {
  from: string | null
  username: string | null
  topic: string
  /** the batch (`Batch`'s sequence) and kind 1 record that wrote them */
  batch: number
  record: number
}

/** Events written for the thread since the last `take`. */
export class Batch {
  #bytes = Buffer.from(new ArrayBuffer(FIRST_BYTES))
  #at = 0
  /** per publisher (see `publish`), the texts of its last kind 1 record */
  readonly #publishers = new WeakMap<object, PublisherText>()
  /** batches taken so far, and the kind 1 records written in this one */
  #sequence = 0
  #publishes = 0
  /** events written and their sizes */
  events = 0
  size = 0

  /** An event whose JSON body is written here. */
  body (key: string, size: number, body: string): void {
    this.#room(5 + jsonRoom(key) + 4 + body.length * 3)
    const at = this.#json(key, this.#head(BODY, size))
    const length = this.#bytes.write(body, at + 4)
    this.#u32(length, at)
    this.#at = at + 4 + length
  }

  /**
   * A message.publish: its fields, its publisher the key; `ts` in ms. `publisher` (its connection's ClientInfo, when a
   * client published it) remembers its last texts: its next message in this batch with the same ones is a kind 2 record.
   */
  publish (size: number, message: MessageInfo, username: string | null, ts: number, publisher?: object): void {
    const { from = null, topic, payload } = message
    const last = publisher === undefined ? undefined : this.#publishers.get(publisher)
    if (last !== undefined && last.batch === this.#sequence && last.from === from && last.username === username && last.topic === topic) {
      return this.#repeat(size, message, ts, last.record)
    }
    this.#room(5 + jsonRoom(from) + jsonRoom(username) + jsonRoom(topic) + 14 + payload.length)
    const at = this.#json(topic, this.#json(username, this.#json(from, this.#head(PUBLISH, size))))
    if (last !== undefined) {
      // the entry is updated in place: no object made for a publisher's first message of each batch
      last.from = from
      last.username = username
      last.topic = topic
      last.batch = this.#sequence
      last.record = this.#publishes
    } else if (publisher !== undefined) this.#publishers.set(publisher, { from, username, topic, batch: this.#sequence, record: this.#publishes })
    this.#publishes++
    this.#fields(message, ts, at)
  }

  /** A kind 2 record: a message.publish whose texts are those of the batch's kind 1 record `record`. */
  #repeat (size: number, message: MessageInfo, ts: number, record: number): void {
    this.#room(23 + message.payload.length)
    const at = this.#head(REPEAT, size)
    this.#u32(record, at)
    this.#fields(message, ts, at + 4)
  }

  /** A message.publish record's last fields from `at` (room made for them): qos, retain, ts, the payload. */
  #fields (message: MessageInfo, ts: number, at: number): void {
    const bytes = this.#bytes
    const payload = message.payload
    bytes[at] = message.qos
    bytes[at + 1] = message.retain ? 1 : 0
    bytes.writeDoubleLE(ts, at + 2)
    this.#u32(payload.length, at + 10)
    bytes.set(payload, at + 14)
    this.#at = at + 14 + payload.length
  }

  /** The batch's bytes (a buffer of its own, to transfer) and how many; the next event starts another batch. */
  take (): { bytes: ArrayBuffer, length: number, events: number, size: number } {
    const taken = { bytes: this.#bytes.buffer, length: this.#at, events: this.events, size: this.size }
    this.#bytes = Buffer.from(new ArrayBuffer(Math.max(FIRST_BYTES, this.#at)))
    this.#at = 0
    this.#sequence++
    this.#publishes = 0
    this.events = 0
    this.size = 0
    return taken
  }

  /** Starts a record (room made for it): its kind and size; answers where its key goes. */
  #head (kind: number, size: number): number {
    const at = this.#at
    this.#bytes[at] = kind
    this.#u32(size, at + 1)
    this.events++
    this.size += size
    return at + 5
  }

  #u32 (value: number, at: number): void {
    const bytes = this.#bytes
    bytes[at] = value
    bytes[at + 1] = value >>> 8
    bytes[at + 2] = value >>> 16
    bytes[at + 3] = value >>> 24
  }

  /** Writes the JSON text of a string, or null, at `at` (room made for it); answers where the next field goes. */
  #json (value: string | null, at: number): number {
    const bytes = this.#bytes
    if (value === null) {
      this.#u32(4, at)
      bytes.set(NULL, at + 4)
      return at + 8
    }
    const start = at + 4
    bytes[start] = QUOTE
    let end = start + 1
    let plain = true
    for (let i = 0; i < value.length; i++) {
      const code = value.charCodeAt(i)
      // a control character, `"`, `\` or past ASCII: JSON.stringify writes it
      if (code < 0x20 || code === QUOTE || code === 0x5c || code > 0x7e) {
        plain = false
        break
      }
      bytes[end++] = code
    }
    if (plain) bytes[end++] = QUOTE
    else end = start + bytes.write(JSON.stringify(value), start)
    this.#u32(end - start, at)
    return end
  }

  /** Room for `bytes` more: a buffer twice as large, the batch so far copied, when it has not. */
  #room (bytes: number): void {
    const old = this.#bytes
    if (old.length - this.#at >= bytes) return
    this.#bytes = Buffer.from(new ArrayBuffer(Math.max(old.length * 2, this.#at + bytes)))
    old.copy(this.#bytes, 0, 0, this.#at)
  }
}

/**
 * The message.publish events of one callback of the event loop, kept as they came (the message and its
 * publisher's connection, nothing copied) until its end, then written into a batch in one loop, stamped with one
 * reading of the clock taken when the first came.
 */
export class PendingPublishes {
  readonly #messages: Array<MessageInfo | undefined> = []
  readonly #usernames: Array<string | null> = []
  readonly #publishers: Array<object | undefined> = []
  readonly #sizes: number[] = []
  #ts = 0
  events = 0
  size = 0

  /** Keeps an event; answers true for the first since the last `writeTo` (its caller then arranges that at the callback's end). */
  add (size: number, message: MessageInfo, username: string | null, publisher?: object): boolean {
    const n = this.events++
    if (n === 0) this.#ts = Date.now()
    this.#messages[n] = message
    this.#usernames[n] = username
    this.#publishers[n] = publisher
    this.#sizes[n] = size
    this.size += size
    return n === 0
  }

  /** Writes the events into `batch`, in order, and lets go of them. */
  writeTo (batch: Batch): void {
    const messages = this.#messages
    const publishers = this.#publishers
    for (let n = 0; n < this.events; n++) {
      batch.publish(this.#sizes[n], messages[n] as MessageInfo, this.#usernames[n], this.#ts, publishers[n])
    }
    this.forget()
  }

  /** Lets go of the events (written, or not to be). */
  forget (): void {
    for (let n = 0; n < this.events; n++) {
      this.#messages[n] = undefined
      this.#publishers[n] = undefined
    }
    this.events = 0
    this.size = 0
  }
}

/**
 * Where one record's parts lie in a batch's bytes, as `[start, end)` offsets (the JSON texts without their u32
 * lengths); one object, filled again for each record, so that reading a batch makes no object or string per event.
 */
export interface BatchRecord {
  /**
   * 0: any event, its JSON body from `bodyStart`; 1: a message.publish, its fields; 2: a message.publish whose
   * client id, username and topic are those of kind 1 record `publish` (their offsets are that record's)
   */
  kind: number
  /** of a message.publish, its number among the batch's kind 1 records (kind 2: the one whose texts it has) */
  publish: number
  size: number
  keyStart: number
  keyEnd: number
  bodyStart: number
  bodyEnd: number
  userStart: number
  userEnd: number
  topicStart: number
  topicEnd: number
  qos: number
  retain: boolean
  ts: number
  payloadStart: number
  payloadEnd: number
}

/** Reads the events of a batch written by `Batch` (`bytes` over the transferred buffer), in order. */
export function readBatch (bytes: Buffer, length: number, each: (record: BatchRecord) => void): void {
  const record: BatchRecord = { kind: 0, publish: 0, size: 0, keyStart: 0, keyEnd: 0, bodyStart: 0, bodyEnd: 0, userStart: 0, userEnd: 0, topicStart: 0, topicEnd: 0, qos: 0, retain: false, ts: 0, payloadStart: 0, payloadEnd: 0 }
  // read by hand: a third of the cost of readUInt32LE's checks, on every field of every event
  const u32 = (at: number): number => (bytes[at] | (bytes[at + 1] << 8) | (bytes[at + 2] << 16)) + bytes[at + 3] * 0x1000000
  /** per kind 1 record, the offsets of its three texts (six numbers), for the kind 2 records after it */
  const texts: number[] = []
  let at = 0
  while (at < length) {
    record.kind = bytes[at]
    record.size = u32(at + 1)
    if (record.kind === 2) {
      const n = record.publish = u32(at + 5)
      record.keyStart = texts[n * 6]
      record.keyEnd = texts[n * 6 + 1]
      record.userStart = texts[n * 6 + 2]
      record.userEnd = texts[n * 6 + 3]
      record.topicStart = texts[n * 6 + 4]
      record.topicEnd = texts[n * 6 + 5]
      at = fields(at + 9)
      continue
    }
    record.keyStart = at + 9
    at = record.keyEnd = record.keyStart + u32(at + 5)
    if (record.kind === 0) {
      record.bodyStart = at + 4
      at = record.bodyEnd = record.bodyStart + u32(at)
      each(record)
      continue
    }
    record.userStart = at + 4
    at = record.userEnd = record.userStart + u32(at)
    record.topicStart = at + 4
    at = record.topicEnd = record.topicStart + u32(at)
    record.publish = texts.length / 6
    texts.push(record.keyStart, record.keyEnd, record.userStart, record.userEnd, record.topicStart, record.topicEnd)
    at = fields(at)
  }

  /** A message.publish's fields from its qos on: hands the record over; answers where the next one starts. */
  function fields (from: number): number {
    record.qos = bytes[from]
    record.retain = bytes[from + 1] === 1
    record.ts = bytes.readDoubleLE(from + 2)
    record.payloadStart = from + 14
    record.payloadEnd = record.payloadStart + u32(from + 10)
    each(record)
    return record.payloadEnd
  }
}
