// The query language of the stand-in's `find`: what an auth plugin's filters
// use, and nothing more. A filter is `{field: value}` equality (a document
// whose field is an array matches when one element equals), `{field: {$eq}}`,
// `{field: {$in: [...]}}`, `$or` and `$and`; dotted paths read sub-documents.
// Any other operator is refused (a real mongod would run it), so a test sees
// when a plugin sends more than it should.
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

function same (a: unknown, b: unknown): boolean {
  if (a === undefined) return b === null
  return isDeepStrictEqual(a, b)
}

function equals (field: unknown, wanted: unknown): boolean {
  if (Array.isArray(field) && !Array.isArray(wanted)) return field.some((item) => same(item, wanted))
  return same(field, wanted)
}

function isOperatorObject (value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false
  const keys = Object.keys(value)
  return keys.length > 0 && keys.every((k) => k.startsWith('$'))
}

function condition (field: unknown, spec: unknown): boolean {
  if (!isOperatorObject(spec)) return equals(field, spec)
  return Object.entries(spec).every(([op, arg]) => {
    if (op === '$eq') return equals(field, arg)
    if (op === '$in') {
      if (!Array.isArray(arg)) throw new BadQuery('$in needs an array')
      return arg.some((item) => equals(field, item))
    }
    throw new BadQuery(`unknown operator: ${op}`)
  })
}

function clauses (op: string, value: unknown): Document[] {
  if (!Array.isArray(value) || value.length === 0) throw new BadQuery(`${op} must be a nonempty array`)
  return value as Document[]
}

/** True when `doc` matches `filter`; throws BadQuery for what the stand-in does not know. */
export function matches (doc: Document, filter: Document): boolean {
  return Object.entries(filter).every(([key, spec]) => {
    if (key === '$or') return clauses(key, spec).some((f) => matches(doc, f))
    if (key === '$and') return clauses(key, spec).every((f) => matches(doc, f))
    if (key.startsWith('$')) throw new BadQuery(`unknown top level operator: ${key}`)
    return condition(read(doc, key), spec)
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
