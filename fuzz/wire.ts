// Byte-level MQTT encoding for the fuzzer. Unlike mqtt-packet's generator it
// writes whatever it is given: duplicated or unknown properties, values out of
// range, wrong flags, invalid UTF-8, and a Remaining Length that need not match.

export const u8 = (n: number): Buffer => Buffer.from([n & 0xff])
export const u16 = (n: number): Buffer => { const b = Buffer.alloc(2); b.writeUInt16BE(n & 0xffff); return b }
export const u32 = (n: number): Buffer => { const b = Buffer.alloc(4); b.writeUInt32BE(n >>> 0); return b }

/** Variable Byte Integer [MQTT-1.5.5]; values above 268 435 455 give a fifth byte (invalid on purpose). */
export function varint (n: number): Buffer {
  const out: number[] = []
  let rest = Math.max(0, Math.floor(n))
  do {
    let byte = rest % 128
    rest = Math.floor(rest / 128)
    if (rest > 0) byte |= 0x80
    out.push(byte)
  } while (rest > 0)
  return Buffer.from(out)
}

/** A two-byte length then the bytes (UTF-8 string or binary data). */
export const lengthPrefixed = (data: Buffer): Buffer => Buffer.concat([u16(data.length), data])

/** The type of each MQTT 5 property's value [MQTT-2.2.2.2]. */
export type PropertyType = 'byte' | 'u16' | 'u32' | 'varint' | 'string' | 'binary' | 'pair'

export const PROPERTY_TYPES: Record<number, PropertyType> = {
  0x01: 'byte', 0x02: 'u32', 0x03: 'string', 0x08: 'string', 0x09: 'binary', 0x0b: 'varint',
  0x11: 'u32', 0x12: 'string', 0x13: 'u16', 0x15: 'string', 0x16: 'binary', 0x17: 'byte',
  0x18: 'u32', 0x19: 'byte', 0x1a: 'string', 0x1c: 'string', 0x1f: 'string', 0x21: 'u16',
  0x22: 'u16', 0x23: 'u16', 0x24: 'byte', 0x25: 'byte', 0x26: 'pair', 0x27: 'u32',
  0x28: 'byte', 0x29: 'byte', 0x2a: 'byte'
}

/** One property as written: its identifier and its value's bytes (already encoded). */
export interface Property { id: number, value: Buffer }

export function encodeValue (type: PropertyType, value: number | Buffer | [Buffer, Buffer]): Buffer {
  switch (type) {
    case 'byte': return u8(value as number)
    case 'u16': return u16(value as number)
    case 'u32': return u32(value as number)
    case 'varint': return varint(value as number)
    case 'string': case 'binary': return lengthPrefixed(value as Buffer)
    case 'pair': return Buffer.concat((value as [Buffer, Buffer]).map(lengthPrefixed))
  }
}

/** The property block: its length, then each property (identifier as a Variable Byte Integer). */
export function properties (list: Property[]): Buffer {
  const body = Buffer.concat(list.map((p) => Buffer.concat([varint(p.id), p.value])))
  return Buffer.concat([varint(body.length), body])
}

/** Fixed header + body; `lengthDelta` makes the Remaining Length lie by that much. */
export function packet (type: number, flags: number, body: Buffer, lengthDelta = 0): Buffer {
  return Buffer.concat([u8((type << 4) | (flags & 0x0f)), varint(Math.max(0, body.length + lengthDelta)), body])
}
