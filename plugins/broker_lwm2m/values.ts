// What the content formats share: LwM2M paths, the resource value types of
// the object definitions, one decoded value (`Entry`, EMQ X's content item
// `{path, value}`) and the CoAP Content-Format numbers of LwM2M 1.0.
export type ResourceType = 'String' | 'Integer' | 'Float' | 'Boolean' | 'Opaque' | 'Time' | 'Objlnk' | 'None'
export const RESOURCE_TYPES: readonly ResourceType[] = Object.freeze(['String', 'Integer', 'Float', 'Boolean', 'Opaque', 'Time', 'Objlnk', 'None'])

/** A value as the MQTT side sees it: Opaque as base64, Objlnk as `"<object>:<instance>"`. */
export type Value = string | number | boolean

/** One resource (instance) value at its full path, e.g. `/3/0/0` or `/3/0/6/1`. */
export interface Entry { path: string, value: Value }

/** The type of resource `resource` of object `object` (from the object definitions); undefined when unknown. */
export type TypeOf = (object: number, resource: number) => ResourceType | undefined

export const FORMAT = Object.freeze({
  text: 0,
  link: 40,
  opaque: 42,
  tlv: 11542,
  json: 11543,
  /** the numbers LwM2M 1.0 drafts used, still sent by old clients */
  tlvOld: 1542,
  jsonOld: 1543
})

/** The largest id a path level holds (16-bit ids; 65535 is reserved). */
const MAX_ID = 65534

/** `/3/0/1` (or `3/0/1`) → [3, 0, 1]; undefined when not 1–4 levels of ids. */
export function parsePath (path: string): number[] | undefined {
  if (typeof path !== 'string' || path.length > 32) return undefined
  const levels = path.replace(/^\//, '').replace(/\/$/, '').split('/')
  if (levels.length < 1 || levels.length > 4) return undefined
  const ids: number[] = []
  for (const level of levels) {
    if (!/^\d{1,5}$/.test(level)) return undefined
    const id = Number(level)
    if (id > MAX_ID) return undefined
    ids.push(id)
  }
  return ids
}

export function formatPath (ids: readonly number[]): string {
  return `/${ids.join('/')}`
}

/** A content error: the payload does not fit its format (or the format is unknown). */
export class ContentError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'ContentError'
  }
}

/** An Objlnk value `"<object>:<instance>"` → its two ids. */
export function parseObjlnk (value: string): [number, number] {
  const m = /^(\d{1,5}):(\d{1,5})$/.exec(value)
  if (m === null || Number(m[1]) > 0xffff || Number(m[2]) > 0xffff) throw new ContentError(`${JSON.stringify(value)} is not an object link (<object>:<instance>)`)
  return [Number(m[1]), Number(m[2])]
}

/** Checks and normalises a value written from the MQTT side for its type. */
export function coerceValue (type: ResourceType, value: unknown): Value {
  switch (type) {
    case 'Integer': case 'Time': {
      const n = typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value) : value
      if (typeof n !== 'number' || !Number.isSafeInteger(n)) throw new ContentError(`${JSON.stringify(value)} is not an integer`)
      return n
    }
    case 'Float': {
      const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value
      if (typeof n !== 'number' || !Number.isFinite(n)) throw new ContentError(`${JSON.stringify(value)} is not a number`)
      return n
    }
    case 'Boolean':
      if (value === true || value === 'true' || value === 1 || value === '1') return true
      if (value === false || value === 'false' || value === 0 || value === '0') return false
      throw new ContentError(`${JSON.stringify(value)} is not a boolean`)
    case 'Objlnk':
      if (typeof value !== 'string') throw new ContentError(`${JSON.stringify(value)} is not an object link (<object>:<instance>)`)
      parseObjlnk(value)
      return value
    case 'Opaque':
      if (typeof value !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(value)) throw new ContentError(`${JSON.stringify(value)} is not base64`)
      return value
    case 'String':
      if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') throw new ContentError(`${JSON.stringify(value)} is not a string`)
      return String(value)
    default:
      throw new ContentError(`a resource of type ${type} has no value`)
  }
}
