// The LwM2M JSON content format of LwM2M 1.0 (§6.4.4,
// application/vnd.oma.lwm2m+json, 11543): `{"bn": <base name>, "e": [{"n":
// <name>, "v" | "bv" | "sv" | "ov": <value>, "t": <time>}]}`, each element's
// path being the base name followed by its name. Numbers (Integer, Float,
// Time) are `v`, booleans `bv`, object links `ov` ("3:0"), strings and
// opaque values (base64) `sv`.
import { ContentError, formatPath, parsePath, type Entry, type ResourceType, type TypeOf, type Value } from './values.js'

const MAX_ELEMENTS = 4096

interface JsonElement { n?: unknown, v?: unknown, bv?: unknown, sv?: unknown, ov?: unknown, t?: unknown }

/** A JSON payload read at `base` → its values at their full paths. */
export function decodeJson (bytes: Buffer, base: readonly number[], typeOf: TypeOf): Entry[] {
  let doc: unknown
  try {
    doc = JSON.parse(bytes.toString('utf8'))
  } catch {
    throw new ContentError('the payload is not JSON')
  }
  if (typeof doc !== 'object' || doc === null || !Array.isArray((doc as { e?: unknown }).e)) throw new ContentError('LwM2M JSON without its "e" array')
  const { bn, e } = doc as { bn?: unknown, e: unknown[] }
  if (bn !== undefined && typeof bn !== 'string') throw new ContentError('"bn" is not a string')
  if (e.length > MAX_ELEMENTS) throw new ContentError(`more than ${MAX_ELEMENTS} elements`)
  const prefix = bn ?? `${formatPath(base)}/`
  return e.map((raw) => {
    if (typeof raw !== 'object' || raw === null) throw new ContentError('an element is not an object')
    const element = raw as JsonElement
    if (element.n !== undefined && typeof element.n !== 'string') throw new ContentError('"n" is not a string')
    const name = `${prefix}${element.n ?? ''}`.replace(/\/{2,}/g, '/')
    const path = parsePath(name)
    if (path === undefined || path.length < 3) throw new ContentError(`${JSON.stringify(name)} is not a resource path`)
    return { path: formatPath(path), value: elementValue(element, typeOf(path[0], path[2])) }
  })
}

function elementValue (element: JsonElement, type: ResourceType | undefined): Value {
  if (typeof element.v === 'number') return element.v
  if (typeof element.bv === 'boolean') return element.bv
  if (typeof element.ov === 'string') return element.ov
  if (typeof element.sv === 'string') return element.sv
  throw new ContentError(`an element without a value fit for ${type ?? 'its resource'}`)
}

/** Values → LwM2M JSON with `base` as the base name. */
export function encodeJson (base: readonly number[], entries: ReadonlyArray<{ path: readonly number[], value: Value }>, typeOf: TypeOf): Buffer {
  const bn = `${formatPath(base)}/`
  const e = entries.map(({ path, value }) => {
    const n = path.slice(base.length).join('/')
    switch (typeOf(path[0], path[2])) {
      case 'Integer': case 'Float': case 'Time': return { n, v: Number(value) }
      case 'Boolean': return { n, bv: value === true }
      case 'Objlnk': return { n, ov: String(value) }
      default: return { n, sv: String(value) }
    }
  })
  return Buffer.from(JSON.stringify({ bn, e }))
}
