// Selectors (`auth.mongo.*.selector`): comma-separated `field=value` pairs,
// e.g. `username=%u` or `username=%u,clientid=%c`, each value a template of
// literal text and placeholders (lib/access/backend/placeholders.ts). The
// pairs are parsed once, when the settings load; a query builds a filter
// object whose VALUES are the filled-in strings. A client's name can never
// add a field, an operator or a nested document: `{"$ne": null}` or
// `x, username=admin` as a username is just a string that must equal the
// stored one.
import type { Document } from 'mongodb'
import { fillTemplate, parseTemplate, type QueryValues, type TemplatePart } from '../../lib/plugin-kit/index.js'

export interface SelectorField {
  field: string
  value: TemplatePart[]
}

export type Selector = readonly SelectorField[]

/** Parses `field=value[,field=value…]`; throws an Error saying what is wrong. */
export function parseSelector (text: string): Selector {
  const fields: SelectorField[] = []
  for (const raw of text.split(',')) {
    const pair = raw.trim()
    const eq = pair.indexOf('=')
    if (eq <= 0) throw new Error(`"${pair}" is not field=value`)
    const field = pair.slice(0, eq).trim()
    if (field.startsWith('$') || field.includes('\0') || field.endsWith('.') || field.startsWith('.')) throw new Error(`"${field}" is not a field name`)
    if (fields.some((f) => f.field === field)) throw new Error(`field "${field}" is given twice`)
    fields.push({ field, value: parseTemplate(pair.slice(eq + 1).trim()) })
  }
  return fields
}

/**
 * The filter for one client: `{field: "filled value", …}`; undefined when a
 * placeholder has no value (no user name, no certificate), as such a query
 * can match nothing.
 */
export function selectorFilter (selector: Selector, values: QueryValues): Document | undefined {
  const filter: Document = {}
  for (const { field, value } of selector) {
    const filled = fillTemplate(value, values)
    if (filled === undefined) return undefined
    filter[field] = filled
  }
  return filter
}

/** Several selectors ORed (EMQ X's `acl_query.selector.N`); undefined when none of them can match. */
export function anySelectorFilter (selectors: readonly Selector[], values: QueryValues): Document | undefined {
  const filters = selectors.map((s) => selectorFilter(s, values)).filter((f): f is Document => f !== undefined)
  if (filters.length === 0) return undefined
  return filters.length === 1 ? filters[0] : { $or: filters }
}

/**
 * The field whose value is exactly `%u` (`username=%u`): the matched
 * document's value of it is the user name as stored. Undefined when no field
 * is (`name=user-%u` stores something else than the user name).
 */
export function userNameField (selector: Selector): string | undefined {
  return selector.find(({ value }) => value.length === 1 && 'placeholder' in value[0]! && value[0].placeholder === '%u')?.field
}
