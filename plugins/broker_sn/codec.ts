// The MQTT-SN 1.2 packet codec (MQTT-SN Protocol Specification 1.2, §5):
// one datagram is one packet. `decode` reads a datagram into a packet or
// throws an SnDecodeError saying what is wrong; `encode` writes a packet.
// Both directions of every message type the gateway and its clients send,
// so the tests' client uses the same codec.
//
// Header: Length (1 octet, or 0x01 then 2 octets for 256 and more; it counts
// the whole packet) and MsgType (1 octet). Flags octet: DUP (bit 7), QoS
// (bits 6-5: 00 0, 01 1, 10 2, 11 −1), Retain (4), Will (3), CleanSession
// (2), TopicIdType (1-0: 0 normal, 1 predefined, 2 short, 3 reserved).
import { isUtf8 } from 'node:buffer'

export const MSG = Object.freeze({
  ADVERTISE: 0x00,
  SEARCHGW: 0x01,
  GWINFO: 0x02,
  CONNECT: 0x04,
  CONNACK: 0x05,
  WILLTOPICREQ: 0x06,
  WILLTOPIC: 0x07,
  WILLMSGREQ: 0x08,
  WILLMSG: 0x09,
  REGISTER: 0x0a,
  REGACK: 0x0b,
  PUBLISH: 0x0c,
  PUBACK: 0x0d,
  PUBCOMP: 0x0e,
  PUBREC: 0x0f,
  PUBREL: 0x10,
  SUBSCRIBE: 0x12,
  SUBACK: 0x13,
  UNSUBSCRIBE: 0x14,
  UNSUBACK: 0x15,
  PINGREQ: 0x16,
  PINGRESP: 0x17,
  DISCONNECT: 0x18,
  WILLTOPICUPD: 0x1a,
  WILLTOPICRESP: 0x1b,
  WILLMSGUPD: 0x1c,
  WILLMSGRESP: 0x1d
})

/** ReturnCode values (§5.3.10) */
export const RC = Object.freeze({ ACCEPTED: 0x00, CONGESTION: 0x01, INVALID_TOPIC_ID: 0x02, NOT_SUPPORTED: 0x03 })

/** TopicIdType values (§5.3.4) */
export const TOPIC = Object.freeze({ NORMAL: 0, PREDEFINED: 1, SHORT: 2, RESERVED: 3 })

/** The protocol id of CONNECT (§5.3.7) */
export const PROTOCOL_ID = 0x01

/** A packet's whole length can be at most this (the 3-octet length field). */
export const MAX_LENGTH = 0xffff

export type SnQoS = -1 | 0 | 1 | 2
export type TopicIdType = 0 | 1 | 2 | 3

export interface Flags {
  dup: boolean
  qos: SnQoS
  retain: boolean
  will: boolean
  cleanSession: boolean
  topicIdType: TopicIdType
}

export type SnPacket =
  | { type: 'advertise', gwId: number, duration: number }
  | { type: 'searchgw', radius: number }
  | { type: 'gwinfo', gwId: number, gwAdd?: Buffer }
  | { type: 'connect', flags: Flags, protocolId: number, duration: number, clientId: string }
  | { type: 'connack', returnCode: number }
  | { type: 'willtopicreq' }
  /** no flags and no topic: the client has no will (an empty WILLTOPIC) */
  | { type: 'willtopic', flags?: Flags, topic?: string }
  | { type: 'willmsgreq' }
  | { type: 'willmsg', message: Buffer }
  | { type: 'register', topicId: number, msgId: number, topicName: string }
  | { type: 'regack', topicId: number, msgId: number, returnCode: number }
  /** `topicId`: the 2 octets, also for a short topic name (see shortTopicName) */
  | { type: 'publish', flags: Flags, topicId: number, msgId: number, data: Buffer }
  | { type: 'puback', topicId: number, msgId: number, returnCode: number }
  | { type: 'pubcomp' | 'pubrec' | 'pubrel' | 'unsuback', msgId: number }
  /** topicIdType 0: `topicName`; 1 and 2 (and the reserved 3): `topicId`, the 2 octets */
  | { type: 'subscribe' | 'unsubscribe', flags: Flags, msgId: number, topicName?: string, topicId?: number }
  | { type: 'suback', flags: Flags, topicId: number, msgId: number, returnCode: number }
  | { type: 'pingreq', clientId?: string }
  | { type: 'pingresp' }
  | { type: 'disconnect', duration?: number }
  /** no flags and no topic: delete the will */
  | { type: 'willtopicupd', flags?: Flags, topic?: string }
  | { type: 'willmsgupd', message: Buffer }
  | { type: 'willtopicresp' | 'willmsgresp', returnCode: number }

export type SnType = SnPacket['type']

/** Why a datagram is not an MQTT-SN packet. */
export class SnDecodeError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'SnDecodeError'
  }
}

const QOS_BITS: Readonly<Record<number, SnQoS>> = Object.freeze({ 0: 0, 1: 1, 2: 2, 3: -1 })

export function decodeFlags (octet: number): Flags {
  return {
    dup: (octet & 0x80) !== 0,
    qos: QOS_BITS[(octet >> 5) & 0x03],
    retain: (octet & 0x10) !== 0,
    will: (octet & 0x08) !== 0,
    cleanSession: (octet & 0x04) !== 0,
    topicIdType: (octet & 0x03) as TopicIdType
  }
}

export function encodeFlags (flags: Partial<Flags>): number {
  const qos = flags.qos ?? 0
  return (flags.dup === true ? 0x80 : 0) |
    ((qos === -1 ? 3 : qos) << 5) |
    (flags.retain === true ? 0x10 : 0) |
    (flags.will === true ? 0x08 : 0) |
    (flags.cleanSession === true ? 0x04 : 0) |
    ((flags.topicIdType ?? 0) & 0x03)
}

export function flags (set: Partial<Flags> = {}): Flags {
  return { dup: false, qos: 0, retain: false, will: false, cleanSession: false, topicIdType: 0, ...set }
}

/** The topic name a short topic id stands for: its two octets as UTF-8 (undefined when they are not, or hold U+0000). */
export function shortTopicName (topicId: number): string | undefined {
  try {
    const name = text(Buffer.from([(topicId >> 8) & 0xff, topicId & 0xff]), 'a short topic name')
    return name
  } catch {
    return undefined
  }
}

/** The short topic id of a two-octet topic name, or undefined when it is not two octets of UTF-8. */
export function shortTopicId (name: string): number | undefined {
  const bytes = Buffer.from(name)
  return bytes.length === 2 ? bytes.readUInt16BE(0) : undefined
}

function text (bytes: Buffer, what: string): string {
  if (!isUtf8(bytes)) throw new SnDecodeError(`${what} is not UTF-8`)
  if (bytes.includes(0)) throw new SnDecodeError(`${what} holds U+0000`)
  return bytes.toString('utf8')
}

/** Reads one datagram. */
export function decode (datagram: Buffer): SnPacket {
  if (datagram.length < 2) throw new SnDecodeError(`a datagram of ${datagram.length} octet(s) is shorter than a header`)
  let length = datagram[0]
  let at = 1
  if (length === 0x01) {
    if (datagram.length < 4) throw new SnDecodeError('a 3-octet length field cut short')
    length = datagram.readUInt16BE(1)
    at = 3
  } else if (length === 0) {
    throw new SnDecodeError('length 0')
  }
  if (length !== datagram.length) throw new SnDecodeError(`the length field says ${length} octets, the datagram has ${datagram.length}`)
  const type = datagram[at]
  const body = datagram.subarray(at + 1)
  return decodeBody(type, body)
}

function exactly (body: Buffer, n: number, name: string): void {
  if (body.length !== n) throw new SnDecodeError(`${name} has ${body.length} octet(s) after its type, not ${n}`)
}

function atLeast (body: Buffer, n: number, name: string): void {
  if (body.length < n) throw new SnDecodeError(`${name} has ${body.length} octet(s) after its type, fewer than ${n}`)
}

function decodeBody (type: number, body: Buffer): SnPacket {
  switch (type) {
    case MSG.ADVERTISE:
      exactly(body, 3, 'ADVERTISE')
      return { type: 'advertise', gwId: body[0], duration: body.readUInt16BE(1) }
    case MSG.SEARCHGW:
      exactly(body, 1, 'SEARCHGW')
      return { type: 'searchgw', radius: body[0] }
    case MSG.GWINFO:
      atLeast(body, 1, 'GWINFO')
      return body.length === 1 ? { type: 'gwinfo', gwId: body[0] } : { type: 'gwinfo', gwId: body[0], gwAdd: Buffer.from(body.subarray(1)) }
    case MSG.CONNECT:
      atLeast(body, 4, 'CONNECT')
      return { type: 'connect', flags: decodeFlags(body[0]), protocolId: body[1], duration: body.readUInt16BE(2), clientId: text(body.subarray(4), 'the ClientId') }
    case MSG.CONNACK:
      exactly(body, 1, 'CONNACK')
      return { type: 'connack', returnCode: body[0] }
    case MSG.WILLTOPICREQ: case MSG.WILLMSGREQ: case MSG.PINGRESP:
      exactly(body, 0, type === MSG.PINGRESP ? 'PINGRESP' : type === MSG.WILLTOPICREQ ? 'WILLTOPICREQ' : 'WILLMSGREQ')
      return { type: type === MSG.PINGRESP ? 'pingresp' : type === MSG.WILLTOPICREQ ? 'willtopicreq' : 'willmsgreq' }
    case MSG.WILLTOPIC: case MSG.WILLTOPICUPD: {
      const name = type === MSG.WILLTOPIC ? 'willtopic' : 'willtopicupd'
      if (body.length === 0) return { type: name }
      atLeast(body, 2, name.toUpperCase())
      return { type: name, flags: decodeFlags(body[0]), topic: text(body.subarray(1), 'the will topic') }
    }
    case MSG.WILLMSG: case MSG.WILLMSGUPD:
      return { type: type === MSG.WILLMSG ? 'willmsg' : 'willmsgupd', message: Buffer.from(body) }
    case MSG.REGISTER:
      atLeast(body, 5, 'REGISTER')
      return { type: 'register', topicId: body.readUInt16BE(0), msgId: body.readUInt16BE(2), topicName: text(body.subarray(4), 'the topic name') }
    case MSG.REGACK:
      exactly(body, 5, 'REGACK')
      return { type: 'regack', topicId: body.readUInt16BE(0), msgId: body.readUInt16BE(2), returnCode: body[4] }
    case MSG.PUBLISH:
      atLeast(body, 5, 'PUBLISH')
      return { type: 'publish', flags: decodeFlags(body[0]), topicId: body.readUInt16BE(1), msgId: body.readUInt16BE(3), data: Buffer.from(body.subarray(5)) }
    case MSG.PUBACK:
      exactly(body, 5, 'PUBACK')
      return { type: 'puback', topicId: body.readUInt16BE(0), msgId: body.readUInt16BE(2), returnCode: body[4] }
    case MSG.PUBCOMP: case MSG.PUBREC: case MSG.PUBREL: case MSG.UNSUBACK: {
      const name = ({ [MSG.PUBCOMP]: 'pubcomp', [MSG.PUBREC]: 'pubrec', [MSG.PUBREL]: 'pubrel', [MSG.UNSUBACK]: 'unsuback' } as const)[type]
      exactly(body, 2, name.toUpperCase())
      return { type: name, msgId: body.readUInt16BE(0) }
    }
    case MSG.SUBSCRIBE: case MSG.UNSUBSCRIBE: {
      const name = type === MSG.SUBSCRIBE ? 'subscribe' : 'unsubscribe'
      atLeast(body, 4, name.toUpperCase())
      const f = decodeFlags(body[0])
      const msgId = body.readUInt16BE(1)
      if (f.topicIdType === TOPIC.NORMAL) return { type: name, flags: f, msgId, topicName: text(body.subarray(3), 'the topic name') }
      exactly(body, 5, `${name.toUpperCase()} with a topic id`)
      return { type: name, flags: f, msgId, topicId: body.readUInt16BE(3) }
    }
    case MSG.SUBACK:
      exactly(body, 6, 'SUBACK')
      return { type: 'suback', flags: decodeFlags(body[0]), topicId: body.readUInt16BE(1), msgId: body.readUInt16BE(3), returnCode: body[5] }
    case MSG.PINGREQ:
      return body.length === 0 ? { type: 'pingreq' } : { type: 'pingreq', clientId: text(body, 'the ClientId') }
    case MSG.DISCONNECT:
      if (body.length === 0) return { type: 'disconnect' }
      exactly(body, 2, 'DISCONNECT')
      return { type: 'disconnect', duration: body.readUInt16BE(0) }
    case MSG.WILLTOPICRESP: case MSG.WILLMSGRESP:
      exactly(body, 1, type === MSG.WILLTOPICRESP ? 'WILLTOPICRESP' : 'WILLMSGRESP')
      return { type: type === MSG.WILLTOPICRESP ? 'willtopicresp' : 'willmsgresp', returnCode: body[0] }
    default:
      throw new SnDecodeError(`message type 0x${type.toString(16).padStart(2, '0')} is not one of MQTT-SN 1.2's`)
  }
}

const u16 = (n: number): Buffer => {
  const b = Buffer.alloc(2)
  b.writeUInt16BE(n & 0xffff)
  return b
}

/** The body of a packet: what follows its MsgType. */
function encodeBody (p: SnPacket): [number, Array<Buffer | number[]>] {
  switch (p.type) {
    case 'advertise': return [MSG.ADVERTISE, [[p.gwId], u16(p.duration)]]
    case 'searchgw': return [MSG.SEARCHGW, [[p.radius]]]
    case 'gwinfo': return [MSG.GWINFO, [[p.gwId], p.gwAdd ?? []]]
    case 'connect': return [MSG.CONNECT, [[encodeFlags(p.flags), p.protocolId], u16(p.duration), Buffer.from(p.clientId)]]
    case 'connack': return [MSG.CONNACK, [[p.returnCode]]]
    case 'willtopicreq': return [MSG.WILLTOPICREQ, []]
    case 'willmsgreq': return [MSG.WILLMSGREQ, []]
    case 'willtopic': case 'willtopicupd':
      return [p.type === 'willtopic' ? MSG.WILLTOPIC : MSG.WILLTOPICUPD, p.topic === undefined ? [] : [[encodeFlags(p.flags ?? {})], Buffer.from(p.topic)]]
    case 'willmsg': case 'willmsgupd': return [p.type === 'willmsg' ? MSG.WILLMSG : MSG.WILLMSGUPD, [p.message]]
    case 'register': return [MSG.REGISTER, [u16(p.topicId), u16(p.msgId), Buffer.from(p.topicName)]]
    case 'regack': return [MSG.REGACK, [u16(p.topicId), u16(p.msgId), [p.returnCode]]]
    case 'publish': return [MSG.PUBLISH, [[encodeFlags(p.flags)], u16(p.topicId), u16(p.msgId), p.data]]
    case 'puback': return [MSG.PUBACK, [u16(p.topicId), u16(p.msgId), [p.returnCode]]]
    case 'pubcomp': return [MSG.PUBCOMP, [u16(p.msgId)]]
    case 'pubrec': return [MSG.PUBREC, [u16(p.msgId)]]
    case 'pubrel': return [MSG.PUBREL, [u16(p.msgId)]]
    case 'unsuback': return [MSG.UNSUBACK, [u16(p.msgId)]]
    case 'subscribe': case 'unsubscribe':
      return [p.type === 'subscribe' ? MSG.SUBSCRIBE : MSG.UNSUBSCRIBE,
        [[encodeFlags(p.flags)], u16(p.msgId), p.topicName !== undefined ? Buffer.from(p.topicName) : u16(p.topicId ?? 0)]]
    case 'suback': return [MSG.SUBACK, [[encodeFlags(p.flags)], u16(p.topicId), u16(p.msgId), [p.returnCode]]]
    case 'pingreq': return [MSG.PINGREQ, p.clientId === undefined ? [] : [Buffer.from(p.clientId)]]
    case 'pingresp': return [MSG.PINGRESP, []]
    case 'disconnect': return [MSG.DISCONNECT, p.duration === undefined ? [] : [u16(p.duration)]]
    case 'willtopicresp': return [MSG.WILLTOPICRESP, [[p.returnCode]]]
    case 'willmsgresp': return [MSG.WILLMSGRESP, [[p.returnCode]]]
  }
}

/** Writes one packet; throws a RangeError when it is longer than 65535 octets. */
export function encode (packet: SnPacket): Buffer {
  const [type, parts] = encodeBody(packet)
  const body = Buffer.concat(parts.map((part) => Buffer.isBuffer(part) ? part : Buffer.from(part)))
  const short = body.length + 2
  if (short <= 0xff) return Buffer.concat([Buffer.from([short, type]), body])
  const long = body.length + 4
  if (long > MAX_LENGTH) throw new RangeError(`an MQTT-SN packet of ${long} octets is over ${MAX_LENGTH}`)
  return Buffer.concat([Buffer.from([0x01, long >> 8, long & 0xff, type]), body])
}
