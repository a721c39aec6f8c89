// The query language of the stand-in's `find`: what an auth plugin's filters
// use, and nothing more. A filter is `{field: value}` equality (a document
// whose field is an array matches when one element equals), `{field: {$eq}}`,
// `{field: {$in: [...]}}`, `$or` and `$and`; dotted paths read sub-documents.
// Any other operator is refused (a real mongod would run it), so a test sees
// when a plugin sends more than it should. A collation's `strength` 1 or 2
// compares strings case-insensitively (1 also ignores accents), as mongod's
// ICU collations do; anything else compares exactly.
import { isDeepStrictEqual } from 'node:util'
import type { Document } from 'mongodb'

export class BadQuery extends Error {}

function read (doc: Document, path: string): unknown {
  let value: unknown = doc
  for (const part of path.split('.')) {
    if (value === null || typeof value !== 'object') return undefined
    value = (value as Record<string, unknown>)[part]
  }
  return value
}

/** A collation as `find` and `create` take it (`{locale, strength}`). */
export interface Collation {
  locale: string
  strength?: number
}

/** How two strings compare: exactly, or as a collation says. */
type StringsEqual = (a: string, b: string) => boolean

const exactly: StringsEqual = (a, b) => a === b

export function stringsEqual (collation: Collation | undefined): StringsEqual {
  const strength = collation?.strength ?? 3
  if (collation === undefined || collation.locale === 'simple' || strength > 2) return exactly
  const collator = new Intl.Collator(collation.locale, { sensitivity: strength === 1 ? 'base' : 'accent', usage: 'search' })
  return (a, b) => collator.compare(a, b) === 0
}

function same (a: unknown, b: unknown, eq: StringsEqual): boolean {
  if (a === undefined) return b === null
  if (typeof a === 'string' && typeof b === 'string') return eq(a, b)
  return isDeepStrictEqual(a, b)
}

function equals (field: unknown, wanted: unknown, eq: StringsEqual): boolean {
  if (Array.isArray(field) && !Array.isArray(wanted)) return field.some((item) => same(item, wanted, eq))
  return same(field, wanted, eq)
}

function isOperatorObject (value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false
  const keys = Object.keys(value)
  return keys.length > 0 && keys.every((k) => k.startsWith('$'))
}

function condition (field: unknown, spec: unknown, eq: StringsEqual): boolean {
  if (!isOperatorObject(spec)) return equals(field, spec, eq)
  return Object.entries(spec).every(([op, arg]) => {
    if (op === '$eq') return equals(field, arg, eq)
    if (op === '$in') {
      if (!Array.isArray(arg)) throw new BadQuery('$in needs an array')
      return arg.some((item) => equals(field, item, eq))
    }
    throw new BadQuery(`unknown operator: ${op}`)
  })
}

function clauses (op: string, value: unknown): Document[] {
  if (!Array.isArray(value) || value.length === 0) throw new BadQuery(`${op} must be a nonempty array`)
  return value as Document[]
}

/** True when `doc` matches `filter`; throws BadQuery for what the stand-in does not know. */
export function matches (doc: Document, filter: Document, eq: StringsEqual = exactly): boolean {
  return Object.entries(filter).every(([key, spec]) => {
    if (key === '$or') return clauses(key, spec).some((f) => matches(doc, f, eq))
    if (key === '$and') return clauses(key, spec).every((f) => matches(doc, f, eq))
    if (key.startsWith('$')) throw new BadQuery(`unknown top level operator: ${key}`)
    return condition(read(doc, key), spec, eq)
  })
}

/** An inclusion projection (`{field: 1}`; `_id` kept unless `_id: 0`); no projection returns the document. */
export function project (doc: Document, projection: Document | undefined): Document {
  if (projection === undefined || Object.keys(projection).length === 0) return doc
  const out: Document = {}
  if (projection._id !== 0 && projection._id !== false && '_id' in doc) out._id = doc._id
  for (const [key, on] of Object.entries(projection)) {
    if (key !== '_id' && on !== 0 && on !== false && key in doc) out[key] = doc[key]
  }
  return out
}
