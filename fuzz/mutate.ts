// Random mutation of valid packets: well-formed packets written by
// mqtt-packet (the codec MQTT.js uses), then bit flips, byte edits, inserts,
// deletions, truncation, duplicated ranges and Remaining Length edits.
import fc from 'fast-check'
import mqttPacket, { type Packet } from 'mqtt-packet'
import type { PacketName, Version } from './mqtt-packets.js'

const userProperties = { a: 'b', c: ['d', 'e'] }

/** Well-formed packets of every type a client sends (and some it must not), per version. */
function seedPackets (version: Version): Packet[] {
  const v5 = version === 5
  const props = <T extends object>(p: T): { properties?: T } => (v5 ? { properties: p } : {})
  return [
    { cmd: 'connect', protocolId: 'MQTT', protocolVersion: version, clean: false, keepalive: 30, clientId: 'fz-seed', username: 'u', password: Buffer.from('p'),
      will: { topic: 'w/t', payload: Buffer.from('bye'), qos: 1, retain: true, ...props({ willDelayInterval: 5, messageExpiryInterval: 10, contentType: 'x', userProperties }) },
      ...props({ sessionExpiryInterval: 60, receiveMaximum: 10, maximumPacketSize: 1000, topicAliasMaximum: 5, requestResponseInformation: true, requestProblemInformation: true, userProperties }) },
    { cmd: 'publish', topic: 'a/b', payload: Buffer.from('hello'), qos: 0, retain: false, dup: false },
    { cmd: 'publish', topic: 'a/b', payload: Buffer.from('q1'), qos: 1, messageId: 1, retain: true, dup: false, ...props({ topicAlias: 1, messageExpiryInterval: 5, responseTopic: 'r', correlationData: Buffer.from('c'), userProperties, payloadFormatIndicator: true }) },
    { cmd: 'publish', topic: 'a/c', payload: Buffer.from('q2'), qos: 2, messageId: 2, retain: false, dup: false },
    { cmd: 'puback', messageId: 1 }, { cmd: 'pubrec', messageId: 2 }, { cmd: 'pubrel', messageId: 2 }, { cmd: 'pubcomp', messageId: 2 },
    { cmd: 'subscribe', messageId: 3, subscriptions: [{ topic: 'a/#', qos: 2 }, { topic: '$share/g/a/+', qos: 1 }], ...props({ subscriptionIdentifier: 7, userProperties }) },
    { cmd: 'unsubscribe', messageId: 4, unsubscriptions: ['a/#', '$share/g/a/+'] },
    { cmd: 'pingreq' },
    { cmd: 'disconnect', ...props({ sessionExpiryInterval: 0, reasonString: 'r' }) },
    { cmd: 'connack', returnCode: 0, reasonCode: 0, sessionPresent: false },
    { cmd: 'suback', messageId: 3, granted: [0] },
    { cmd: 'unsuback', messageId: 4, granted: [0] },
    { cmd: 'pingresp' },
    ...(v5 ? [{ cmd: 'auth', reasonCode: 0x18, properties: { authenticationMethod: 'SCRAM-SHA-256', authenticationData: Buffer.from('n,,n=u,r=x') } } as Packet] : [])
  ] as Packet[]
}

export interface Seed { name: PacketName, bytes: Buffer }

const SEEDS: Record<Version, Seed[]> = {
  4: seedPackets(4).map((p) => ({ name: p.cmd as PacketName, bytes: mqttPacket.generate(p, { protocolVersion: 4 }) })),
  5: seedPackets(5).map((p) => ({ name: p.cmd as PacketName, bytes: mqttPacket.generate(p, { protocolVersion: 5 }) }))
}

export const seeds = (version: Version): Seed[] => SEEDS[version]

type Mutation =
  | { op: 'flip', at: number, bit: number }
  | { op: 'set', at: number, value: number }
  | { op: 'insert', at: number, data: Uint8Array }
  | { op: 'delete', at: number, length: number }
  | { op: 'truncate', at: number }
  | { op: 'repeat', at: number, length: number }
  | { op: 'length', delta: number }

/** `at` is a fraction of the buffer's length, so one mutation fits any buffer. */
const at = fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true })
export const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ op: fc.constant('flip' as const), at, bit: fc.nat(7) }),
  fc.record({ op: fc.constant('set' as const), at, value: fc.oneof(fc.constantFrom(0, 0x7f, 0x80, 0xff, 0x26, 0x11), fc.nat(255)) }),
  fc.record({ op: fc.constant('insert' as const), at, data: fc.uint8Array({ minLength: 1, maxLength: 8 }) }),
  fc.record({ op: fc.constant('delete' as const), at, length: fc.integer({ min: 1, max: 8 }) }),
  fc.record({ op: fc.constant('truncate' as const), at }),
  fc.record({ op: fc.constant('repeat' as const), at, length: fc.integer({ min: 1, max: 32 }) }),
  fc.record({ op: fc.constant('length' as const), delta: fc.constantFrom(-2, -1, 1, 2, 127, 128) })
)

export function mutate (input: Buffer, m: Mutation): Buffer {
  const i = 'at' in m ? Math.floor(m.at * input.length) : 0
  switch (m.op) {
    case 'flip': { const out = Buffer.from(input); if (out.length > 0) out[i] ^= 1 << m.bit; return out }
    case 'set': { const out = Buffer.from(input); if (out.length > 0) out[i] = m.value; return out }
    case 'insert': return Buffer.concat([input.subarray(0, i), Buffer.from(m.data), input.subarray(i)])
    case 'delete': return Buffer.concat([input.subarray(0, i), input.subarray(i + m.length)])
    case 'truncate': return input.subarray(0, i)
    case 'repeat': return Buffer.concat([input.subarray(0, i + m.length), input.subarray(i)])
    case 'length': {
      // the first packet's one-byte Remaining Length, when it has one
      if (input.length < 2 || (input[1] & 0x80) !== 0) return input
      const out = Buffer.from(input)
      out[1] = Math.max(0, Math.min(0x7f, out[1] + m.delta))
      return out
    }
  }
}
