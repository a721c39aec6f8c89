// One MQTT fuzz case: what one connection writes, over TCP or WebSocket.
// Generated cases are packet sequences from mqtt-packets.ts (after a valid
// CONNECT most of the time, so the session handlers are reached); mutated
// cases are valid packets (mutate.ts) with a few mutations applied to the
// stream. Either is written whole, packet by packet, or split at random points.
import fc from 'fast-check'
import { anyPacket, connect, validConnect, type PacketName, type Version } from './mqtt-packets.js'
import { mutate, mutation, seeds } from './mutate.js'

export type Transport = 'tcp' | 'ws'

/** What one connection writes: each chunk is one write. */
export interface Connection { transport: Transport, chunks: Buffer[] }

export interface MqttCase {
  kind: 'generated' | 'mutated'
  version: Version
  /** the packet types the case was made of (before mutation) */
  names: PacketName[]
  connection: Connection
}

/** Cuts the packets into the writes: all at once, one per packet, or at arbitrary points. */
function chunked (packets: Buffer[], how: number, cuts: number[]): Buffer[] {
  if (how === 0) return [Buffer.concat(packets)]
  if (how === 1) return packets
  const all = Buffer.concat(packets)
  const points = [...new Set(cuts.map((c) => Math.floor(c * all.length)))].sort((a, b) => a - b)
  const out: Buffer[] = []
  let from = 0
  for (const p of [...points, all.length]) {
    if (p > from) out.push(all.subarray(from, p))
    from = Math.max(from, p)
  }
  return out
}

const transport = fc.oneof({ weight: 3, arbitrary: fc.constant<Transport>('tcp') }, { weight: 1, arbitrary: fc.constant<Transport>('ws') })
const version = fc.constantFrom<Version>(4, 5)
const clientId = fc.nat(15).map((n) => `fz${n}`)
const chunking = fc.tuple(fc.nat(2), fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 4 }))

function generated (v: Version): fc.Arbitrary<Omit<MqttCase, 'connection'> & { packets: Buffer[] }> {
  // two in five after a valid CONNECT (the session's handlers), two in five after a fuzzed one, one in five without
  return fc.tuple(fc.nat(4), clientId, connect(v), fc.array(anyPacket(v), { minLength: 1, maxLength: 6 })).map(([prefix, id, fuzzedConnect, list]) => {
    const first = prefix <= 1 ? [{ name: 'connect' as const, bytes: validConnect(v, id) }] : prefix <= 3 ? [fuzzedConnect] : []
    const all = [...first, ...list]
    return { kind: 'generated' as const, version: v, names: all.map((p) => p.name), packets: all.map((p) => p.bytes) }
  })
}

function mutated (v: Version): fc.Arbitrary<Omit<MqttCase, 'connection'> & { packets: Buffer[] }> {
  const pool = seeds(v)
  return fc.tuple(fc.nat(3), clientId, fc.array(fc.nat(pool.length - 1), { minLength: 1, maxLength: 4 }), fc.array(mutation, { minLength: 1, maxLength: 4 }), fc.nat(1))
    .map(([prefix, id, picks, mutations, mutateConnect]) => {
      const chosen = picks.map((i) => pool[i])
      let body: Buffer = Buffer.concat(chosen.map((s) => s.bytes))
      const connect = prefix === 0 ? Buffer.alloc(0) : validConnect(v, id)
      let whole: Buffer = Buffer.concat([connect, body])
      if (mutateConnect === 1) {
        for (const m of mutations) whole = mutate(whole, m)
      } else {
        for (const m of mutations) body = mutate(body, m)
        whole = Buffer.concat([connect, body])
      }
      const names = [...(connect.length > 0 ? ['connect' as const] : []), ...chosen.map((s) => s.name)]
      return { kind: 'mutated' as const, version: v, names, packets: [whole] }
    })
}

/** A case: three in five generated, two in five mutated. */
export const mqttCase: fc.Arbitrary<MqttCase> = fc.tuple(version, transport, chunking, fc.nat(4))
  .chain(([v, t, [how, cuts], pick]) => (pick < 3 ? generated(v) : mutated(v)).map(({ packets, ...rest }) => ({
    ...rest,
    connection: { transport: t, chunks: chunked(packets, how, cuts) }
  })))
