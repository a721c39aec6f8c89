// The LwM2M TLV content format (OMA-TS-LightweightM2M-V1_0 §6.4.3,
// application/vnd.oma.lwm2m+tlv, 11542). Each element: a type byte (bits
// 7-6: object instance 00, resource instance 01, multiple resource 10,
// resource with value 11; bit 5: 16-bit identifier; bits 4-3: the length's
// size, 0-3 bytes; bits 2-0: the length itself when that size is 0), the
// identifier, the length, the value. Values: integers as 1/2/4/8-byte signed
// big-endian, floats as 4/8-byte IEEE 754, booleans as one byte, strings as
// UTF-8, Objlnk as two 16-bit ids, Time as an integer.
import { ContentError, formatPath, parseObjlnk, type Entry, type ResourceType, type TypeOf, type Value } from './values.js'

export type TlvKind = 'instance' | 'resourceInstance' | 'multiple' | 'resource'
const KINDS: readonly TlvKind[] = Object.freeze(['instance', 'resourceInstance', 'multiple', 'resource'])

export interface Tlv {
  kind: TlvKind
  id: number
  /** the value's bytes (resource, resource instance) */
  value?: Buffer
  /** the elements inside (object instance, multiple resource) */
  children?: Tlv[]
}

/** Elements one payload may hold, at most (nested ones too): a bound on what a datagram makes us build. */
const MAX_ELEMENTS = 4096

/** Parses a TLV payload into its elements; throws a ContentError for bytes that are not TLV. */
export function parseTlv (bytes: Buffer): Tlv[] {
  const count = { n: 0 }
  return parseLevel(bytes, 0, count)
}

function parseLevel (bytes: Buffer, depth: number, count: { n: number }): Tlv[] {
  const out: Tlv[] = []
  let at = 0
  while (at < bytes.length) {
    if (++count.n > MAX_ELEMENTS) throw new ContentError(`more than ${MAX_ELEMENTS} TLV elements`)
    const type = bytes[at++]
    const kind = KINDS[type >> 6]
    const idSize = (type & 0x20) !== 0 ? 2 : 1
    const lengthSize = (type >> 3) & 0x03
    if (at + idSize + lengthSize > bytes.length) throw new ContentError('a TLV element is cut short')
    const id = idSize === 2 ? bytes.readUInt16BE(at) : bytes[at]
    at += idSize
    let length = type & 0x07
    if (lengthSize > 0) {
      length = bytes.readUIntBE(at, lengthSize)
      at += lengthSize
    }
    if (at + length > bytes.length) throw new ContentError(`a TLV element of ${length} bytes is cut short`)
    const value = bytes.subarray(at, at + length)
    at += length
    if (kind === 'instance' || kind === 'multiple') {
      const children = parseLevel(value, depth + 1, count)
      const inner = kind === 'instance' ? ['resource', 'multiple'] : ['resourceInstance']
      if (depth > 1 || children.some((c) => !inner.includes(c.kind))) throw new ContentError(`a TLV ${kind} element holds elements it cannot`)
      out.push({ kind, id, children })
    } else {
      out.push({ kind, id, value })
    }
  }
  return out
}

/** Writes TLV elements. */
export function serializeTlv (elements: readonly Tlv[]): Buffer {
  return Buffer.concat(elements.map(element))
}

function element (tlv: Tlv): Buffer {
  const value = tlv.children !== undefined ? serializeTlv(tlv.children) : tlv.value ?? Buffer.alloc(0)
  const idSize = tlv.id > 0xff ? 2 : 1
  const length = value.length
  const lengthSize = length < 8 ? 0 : length <= 0xff ? 1 : length <= 0xffff ? 2 : 3
  if (length > 0xffffff) throw new ContentError('a TLV value over 16 MB')
  const head = Buffer.alloc(1 + idSize + lengthSize)
  head[0] = (KINDS.indexOf(tlv.kind) << 6) | (idSize === 2 ? 0x20 : 0) | (lengthSize << 3) | (lengthSize === 0 ? length : 0)
  if (idSize === 2) head.writeUInt16BE(tlv.id, 1)
  else head[1] = tlv.id
  if (lengthSize > 0) head.writeUIntBE(length, 1 + idSize, lengthSize)
  return Buffer.concat([head, value])
}

/** A TLV value's bytes → its value for a resource of `type` (unknown: Opaque, as base64). */
export function decodeTlvValue (bytes: Buffer, type: ResourceType | undefined): Value {
  switch (type) {
    case 'Integer': case 'Time':
      if (![1, 2, 4, 8].includes(bytes.length)) throw new ContentError(`an integer of ${bytes.length} bytes`)
      return bytes.length === 8 ? Number(bytes.readBigInt64BE(0)) : bytes.readIntBE(0, bytes.length)
    case 'Float':
      if (bytes.length === 4) return bytes.readFloatBE(0)
      if (bytes.length === 8) return bytes.readDoubleBE(0)
      throw new ContentError(`a float of ${bytes.length} bytes`)
    case 'Boolean':
      if (bytes.length !== 1 || bytes[0] > 1) throw new ContentError('a boolean that is not one byte 0 or 1')
      return bytes[0] === 1
    case 'Objlnk':
      if (bytes.length !== 4) throw new ContentError(`an object link of ${bytes.length} bytes`)
      return `${bytes.readUInt16BE(0)}:${bytes.readUInt16BE(2)}`
    case 'String':
      return bytes.toString('utf8')
    default:
      return bytes.toString('base64')
  }
}

/** A value → its TLV bytes for a resource of `type`. */
export function encodeTlvValue (value: Value, type: ResourceType): Buffer {
  switch (type) {
    case 'Integer': case 'Time': {
      const n = Number(value)
      if (n >= -0x80 && n <= 0x7f) return Buffer.from([n & 0xff])
      const size = n >= -0x8000 && n <= 0x7fff ? 2 : n >= -0x80000000 && n <= 0x7fffffff ? 4 : 8
      const bytes = Buffer.alloc(size)
      if (size === 8) bytes.writeBigInt64BE(BigInt(n))
      else bytes.writeIntBE(n, 0, size)
      return bytes
    }
    case 'Float': {
      const bytes = Buffer.alloc(8)
      bytes.writeDoubleBE(Number(value))
      return bytes
    }
    case 'Boolean':
      return Buffer.from([value === true ? 1 : 0])
    case 'Objlnk': {
      const [object, instance] = parseObjlnk(String(value))
      const bytes = Buffer.alloc(4)
      bytes.writeUInt16BE(object, 0)
      bytes.writeUInt16BE(instance, 2)
      return bytes
    }
    case 'Opaque':
      return Buffer.from(String(value), 'base64')
    default:
      return Buffer.from(String(value), 'utf8')
  }
}

/**
 * A TLV payload read at `base` (1–4 path levels) → its values at their full
 * paths. The elements say what they are: object instances (under an object
 * path), resources and multiple resources (under an instance, or a resource
 * path naming one of them), resource instances (under a resource).
 */
export function decodeTlv (bytes: Buffer, base: readonly number[], typeOf: TypeOf): Entry[] {
  const entries: Entry[] = []
  const object = base[0]
  const add = (path: number[], value: Buffer): void => {
    entries.push({ path: formatPath(path), value: decodeTlvValue(value, typeOf(object, path[2])) })
  }
  const resource = (instance: number, tlv: Tlv): void => {
    if (tlv.kind === 'resource') add([object, instance, tlv.id], tlv.value!)
    else for (const child of tlv.children ?? []) add([object, instance, tlv.id, child.id], child.value!)
  }
  for (const tlv of parseTlv(bytes)) {
    switch (tlv.kind) {
      case 'instance':
        if (base.length > 2) throw new ContentError(`an object instance in the answer for ${formatPath(base)}`)
        for (const child of tlv.children!) resource(tlv.id, child)
        break
      case 'resource': case 'multiple':
        // read on an object of one instance: some clients leave the instance out (it is 0)
        resource(base.length > 1 ? base[1] : 0, tlv)
        break
      default:
        if (base.length < 3) throw new ContentError(`a resource instance in the answer for ${formatPath(base)}`)
        add([object, base[1], base[2], tlv.id], tlv.value!)
    }
  }
  return entries
}

/**
 * Values to write under `base` (an instance or a resource path) → TLV:
 * resources, multiple resources for paths with a resource instance, each
 * value encoded for its resource's type.
 */
export function encodeTlv (base: readonly number[], entries: ReadonlyArray<{ path: readonly number[], value: Value }>, typeOf: TypeOf): Buffer {
  if (base.length === 1) {
    // under an object (create): one object instance element per instance
    const instances = new Map<number, Array<{ path: readonly number[], value: Value }>>()
    for (const entry of entries) instances.set(entry.path[1], [...(instances.get(entry.path[1]) ?? []), entry])
    return serializeTlv([...instances].map(([id, inner]) => ({ kind: 'instance', id, value: encodeTlv([base[0], id], inner, typeOf) })))
  }
  const elements: Tlv[] = []
  const multiples = new Map<number, Tlv>()
  for (const { path, value } of entries) {
    const type = typeOf(path[0], path[2]) ?? 'Opaque'
    const bytes = encodeTlvValue(value, type)
    if (path.length === 3) {
      elements.push({ kind: 'resource', id: path[2], value: bytes })
      continue
    }
    if (path.length !== 4) throw new ContentError(`${formatPath(path)} is not a resource`)
    if (base.length === 4) {
      elements.push({ kind: 'resourceInstance', id: path[3], value: bytes })
      continue
    }
    let multiple = multiples.get(path[2])
    if (multiple === undefined) {
      multiple = { kind: 'multiple', id: path[2], children: [] }
      multiples.set(path[2], multiple)
      elements.push(multiple)
    }
    multiple.children!.push({ kind: 'resourceInstance', id: path[3], value: bytes })
  }
  return serializeTlv(elements)
}
