// fast-check generators of MQTT packets as bytes: all 15 packet types, in
// MQTT 3.1.1 (level 4) and 5 form, mostly well-formed but with the edges a
// parser must survive: duplicated, unknown, missing and out-of-range
// properties, flags that lie, invalid UTF-8 and U+0000, lengths off by one.
import fc from 'fast-check'
import { lengthPrefixed, packet, properties, PROPERTY_TYPES, u16, u8, encodeValue, type Property, type PropertyType } from './wire.js'

export type Version = 4 | 5

/** Control packet names by type number [MQTT-2.1.2]. */
export const PACKET_NAMES = ['reserved', 'connect', 'connack', 'publish', 'puback', 'pubrec', 'pubrel', 'pubcomp',
  'subscribe', 'suback', 'unsubscribe', 'unsuback', 'pingreq', 'pingresp', 'disconnect', 'auth'] as const
export type PacketName = typeof PACKET_NAMES[number]

export interface Generated { name: PacketName, bytes: Buffer }

/** The properties each packet may carry [MQTT-2.2.2.2], the ones a fuzzer should aim at first. */
const ALLOWED: Partial<Record<PacketName, number[]>> = {
  connect: [0x11, 0x21, 0x27, 0x22, 0x19, 0x17, 0x26, 0x15, 0x16],
  connack: [0x11, 0x21, 0x24, 0x25, 0x27, 0x12, 0x22, 0x1f, 0x26, 0x28, 0x29, 0x2a, 0x13, 0x1a, 0x1c, 0x15, 0x16],
  publish: [0x01, 0x02, 0x23, 0x08, 0x09, 0x26, 0x0b, 0x03],
  puback: [0x1f, 0x26], pubrec: [0x1f, 0x26], pubrel: [0x1f, 0x26], pubcomp: [0x1f, 0x26],
  subscribe: [0x0b, 0x26], suback: [0x1f, 0x26], unsubscribe: [0x26], unsuback: [0x1f, 0x26],
  disconnect: [0x11, 0x1f, 0x26, 0x1c], auth: [0x15, 0x16, 0x1f, 0x26]
}
/** Will properties [MQTT-3.1.3.2]. */
const WILL = [0x18, 0x01, 0x02, 0x03, 0x08, 0x09, 0x26]

const bytes = (s: string): Buffer => Buffer.from(s, 'utf8')

/** Strings as bytes: plain, topic-like, hostile (U+0000, U+FFFF, invalid UTF-8), long. */
export const text: fc.Arbitrary<Buffer> = fc.oneof(
  { weight: 8, arbitrary: fc.string({ maxLength: 12 }).map(bytes) },
  { weight: 6, arbitrary: fc.array(fc.constantFrom('a', 'b', '+', '#', '', '$SYS', '$share', 'g', '$queue', 'c/d', ' '), { maxLength: 6 }).map((l) => bytes(l.join('/'))) },
  { weight: 1, arbitrary: fc.constantFrom('\u0000', 'a\u0000b', '\uffff', '\ud800', 'x'.repeat(300)).map(bytes) },
  { weight: 1, arbitrary: fc.constantFrom(Buffer.from([0xc3, 0x28]), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from([0xff]), Buffer.from([0xc0, 0x80])) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 8 }).map(bytes) }
)
const payloadBytes = fc.oneof(fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)), fc.integer({ min: 0, max: 70000 }).map((n) => Buffer.alloc(n, 0x61)))
const packetId = fc.oneof({ weight: 5, arbitrary: fc.integer({ min: 1, max: 5 }) }, { weight: 1, arbitrary: fc.constantFrom(0, 0xffff) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 0xffff }) })

/** A value for a property of that type: mostly in range, sometimes at or beyond the edge. */
function propertyValue (type: PropertyType): fc.Arbitrary<Buffer> {
  const edges = (max: number): fc.Arbitrary<number> => fc.oneof(fc.integer({ min: 0, max: 3 }), fc.constantFrom(max, max - 1), fc.integer({ min: 0, max }))
  switch (type) {
    case 'byte': return edges(0xff).map((n) => encodeValue(type, n))
    case 'u16': return edges(0xffff).map((n) => encodeValue(type, n))
    case 'u32': return edges(0xffffffff).map((n) => encodeValue(type, n))
    case 'varint': return fc.oneof(edges(268435455), fc.constant(268435456)).map((n) => encodeValue(type, n))
    case 'string': case 'binary': return text.map((b) => encodeValue(type, b))
    case 'pair': return fc.tuple(text, text).map((p) => encodeValue(type, p))
  }
}

/** One property: an allowed one mostly, any identifier sometimes; sometimes its value written as another type. */
function property (allowed: number[]): fc.Arbitrary<Property> {
  const anyId = fc.integer({ min: 0, max: 0x7f })
  return fc.tuple(fc.oneof({ weight: 20, arbitrary: fc.constantFrom(...allowed) }, { weight: 1, arbitrary: anyId }), fc.nat(29))
    .chain(([id, twist]) => {
      const own = PROPERTY_TYPES[id] ?? 'byte'
      const type: PropertyType = twist === 0 ? (['byte', 'u16', 'u32', 'string'] as const)[id % 4] : own
      return propertyValue(type).map((value) => ({ id, value }))
    })
}

/** A property block: usually a few properties, one time in two one of them twice. */
function propertyBlock (allowed: number[]): fc.Arbitrary<Buffer> {
  return fc.tuple(fc.array(property(allowed), { maxLength: 4 }), fc.nat(1), fc.nat(3)).map(([list, dup, which]) => {
    const withDuplicate = dup === 0 && list.length > 0 ? [...list, list[which % list.length]] : list
    return properties(withDuplicate)
  })
}

const props = (version: Version, name: PacketName, allowed = ALLOWED[name] ?? []): fc.Arbitrary<Buffer> =>
  version === 5 ? propertyBlock(allowed.length > 0 ? allowed : [0x26]) : fc.constant(Buffer.alloc(0))

/** The fixed header's Remaining Length: right mostly, one off sometimes. */
const lengthDelta = fc.oneof({ weight: 25, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.constantFrom(-1, 1, -2, 2) })
/** Reserved flag bits: right mostly, anything sometimes [MQTT-2.1.3-1]. */
const flagsOr = (right: number): fc.Arbitrary<number> => fc.oneof({ weight: 20, arbitrary: fc.constant(right) }, { weight: 1, arbitrary: fc.nat(15) })

function build (name: PacketName, flags: fc.Arbitrary<number>, body: fc.Arbitrary<Buffer>): fc.Arbitrary<Generated> {
  const type = PACKET_NAMES.indexOf(name)
  return fc.tuple(flags, body, lengthDelta).map(([f, b, delta]) => ({ name, bytes: packet(type, f, b, delta) }))
}

export function connect (version: Version): fc.Arbitrary<Generated> {
  const body = fc.record({
    protocol: fc.oneof({ weight: 20, arbitrary: fc.constant(version === 5 || version === 4 ? 'MQTT' : 'MQIsdp') }, { weight: 1, arbitrary: fc.constantFrom('MQIsdp', 'mqtt', '', 'MQTTT') }),
    level: fc.oneof({ weight: 20, arbitrary: fc.constant<number>(version) }, { weight: 1, arbitrary: fc.constantFrom(3, 4, 5, 6, 0, 0x84, 255) }),
    clean: fc.boolean(),
    will: fc.option(fc.record({ qos: fc.oneof({ weight: 20, arbitrary: fc.nat(2) }, { weight: 1, arbitrary: fc.constant(3) }), retain: fc.boolean(), topic: text, payload: payloadBytes, props: props(version, 'connect', WILL) })),
    username: fc.option(text),
    password: fc.option(text),
    // flags that say something the payload does not hold
    flagNoise: fc.oneof({ weight: 20, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.nat(255) }),
    keepalive: fc.oneof(fc.constant(60), fc.constantFrom(0, 1, 0xffff)),
    props: props(version, 'connect'),
    clientId: fc.oneof({ weight: 4, arbitrary: fc.string({ minLength: 1, maxLength: 10 }).map((s) => bytes('fz' + s)) }, { weight: 1, arbitrary: text })
  }).map((c) => {
    let flags = (c.clean ? 0x02 : 0) | (c.username !== null ? 0x80 : 0) | (c.password !== null ? 0x40 : 0)
    if (c.will !== null) flags |= 0x04 | (c.will.qos << 3) | (c.will.retain ? 0x20 : 0)
    const parts = [lengthPrefixed(bytes(c.protocol)), u8(c.level), u8(flags ^ c.flagNoise), u16(c.keepalive)]
    if (version === 5) parts.push(c.props)
    parts.push(lengthPrefixed(c.clientId))
    if (c.will !== null) {
      if (version === 5) parts.push(c.will.props)
      parts.push(lengthPrefixed(c.will.topic), lengthPrefixed(c.will.payload))
    }
    if (c.username !== null) parts.push(lengthPrefixed(c.username))
    if (c.password !== null) parts.push(lengthPrefixed(c.password))
    return Buffer.concat(parts)
  })
  return build('connect', flagsOr(0), body)
}

function publish (version: Version): fc.Arbitrary<Generated> {
  return fc.record({ dup: fc.boolean(), qos: fc.oneof({ weight: 6, arbitrary: fc.nat(2) }, { weight: 1, arbitrary: fc.constant(3) }), retain: fc.boolean(), topic: text, id: packetId, props: props(version, 'publish'), payload: payloadBytes })
    .map((p) => ({
      flags: (p.dup ? 8 : 0) | (p.qos << 1) | (p.retain ? 1 : 0),
      body: Buffer.concat([lengthPrefixed(p.topic), p.qos > 0 ? u16(p.id) : Buffer.alloc(0), p.props, p.payload])
    }))
    .chain(({ flags, body }) => build('publish', fc.constant(flags), fc.constant(body)))
}

/** PUBACK, PUBREC, PUBREL, PUBCOMP, UNSUBACK-like: packet id, then (v5) reason code and properties, each maybe absent. */
function acknowledgement (version: Version, name: PacketName, flags: number): fc.Arbitrary<Generated> {
  const body = fc.tuple(packetId, fc.nat(2), fc.nat(255), props(version, name)).map(([id, tail, reason, p]) => {
    if (version === 4 || tail === 0) return u16(id)
    return Buffer.concat([u16(id), u8(reason), tail === 2 ? p : Buffer.alloc(0)])
  })
  return build(name, flagsOr(flags), body)
}

function subscribe (version: Version): fc.Arbitrary<Generated> {
  const options = fc.oneof({ weight: 5, arbitrary: fc.nat(2) }, { weight: 2, arbitrary: fc.nat(version === 5 ? 0x3f : 3) }, { weight: 1, arbitrary: fc.nat(255) })
  const body = fc.tuple(packetId, props(version, 'subscribe'), fc.array(fc.tuple(text, options), { maxLength: 5 }))
    .map(([id, p, list]) => Buffer.concat([u16(id), p, ...list.flatMap(([f, o]) => [lengthPrefixed(f), u8(o)])]))
  return build('subscribe', flagsOr(2), body)
}

function unsubscribe (version: Version): fc.Arbitrary<Generated> {
  const body = fc.tuple(packetId, props(version, 'unsubscribe'), fc.array(text, { maxLength: 5 }))
    .map(([id, p, list]) => Buffer.concat([u16(id), p, ...list.map(lengthPrefixed)]))
  return build('unsubscribe', flagsOr(2), body)
}

/** Packets only a server sends, sent to the server (a protocol error it must survive). */
function serverOnly (version: Version, name: 'connack' | 'suback' | 'unsuback' | 'pingresp'): fc.Arbitrary<Generated> {
  const body = fc.tuple(fc.uint8Array({ maxLength: 6 }), props(version, name)).map(([head, p]) => name === 'pingresp' ? Buffer.alloc(0) : Buffer.concat([Buffer.from(head), p]))
  return build(name, flagsOr(0), body)
}

/** DISCONNECT and AUTH: (v5) reason code and properties, each maybe absent. */
function reasonOnly (version: Version, name: 'disconnect' | 'auth'): fc.Arbitrary<Generated> {
  const body = fc.tuple(fc.nat(2), fc.oneof(fc.constantFrom(0, 0x04, 0x18, 0x19), fc.nat(255)), props(version, name))
    .map(([tail, reason, p]) => version === 4 || tail === 0 ? Buffer.alloc(0) : Buffer.concat([u8(reason), tail === 2 ? p : Buffer.alloc(0)]))
  return build(name, flagsOr(0), body)
}

/** Any of the 15 packet types (and type 0, reserved). */
export function anyPacket (version: Version): fc.Arbitrary<Generated> {
  return fc.oneof(
    { weight: 3, arbitrary: connect(version) },
    { weight: 1, arbitrary: serverOnly(version, 'connack') },
    { weight: 6, arbitrary: publish(version) },
    { weight: 2, arbitrary: acknowledgement(version, 'puback', 0) },
    { weight: 2, arbitrary: acknowledgement(version, 'pubrec', 0) },
    { weight: 2, arbitrary: acknowledgement(version, 'pubrel', 2) },
    { weight: 2, arbitrary: acknowledgement(version, 'pubcomp', 0) },
    { weight: 4, arbitrary: subscribe(version) },
    { weight: 1, arbitrary: serverOnly(version, 'suback') },
    { weight: 3, arbitrary: unsubscribe(version) },
    { weight: 1, arbitrary: serverOnly(version, 'unsuback') },
    { weight: 1, arbitrary: build('pingreq', flagsOr(0), fc.constant(Buffer.alloc(0))) },
    { weight: 1, arbitrary: serverOnly(version, 'pingresp') },
    { weight: 2, arbitrary: reasonOnly(version, 'disconnect') },
    { weight: 2, arbitrary: reasonOnly(version, 'auth') },
    { weight: 1, arbitrary: build('reserved', fc.nat(15), fc.uint8Array({ maxLength: 8 }).map((a) => Buffer.from(a))) }
  )
}

/** A CONNECT the broker accepts, so the packets after it reach the session's handlers. */
export function validConnect (version: Version, clientId: string): Buffer {
  const head = [lengthPrefixed(bytes('MQTT')), u8(version), u8(0x02), u16(60)]
  if (version === 5) head.push(properties([]))
  return packet(1, 0, Buffer.concat([...head, lengthPrefixed(bytes(clientId))]))
}
