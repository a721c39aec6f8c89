// Placeholders filled into a DN (RFC 4514) or a search filter (RFC 4515),
// escaped so a user name is always one attribute value: `admin,ou=x` stays
// the value `admin\,ou\=x`, `*)(uid=*` stays `\2a\29\28uid=\2a`.
import { Filter } from 'ldapts'
import { parseTemplate, placeholderValue, type QueryValues, type TemplatePart } from '../../lib/access/backend/placeholders.js'

/** RFC 4514 §2.4: escape `"+,;<>\=`, NUL, a leading space or `#`, a trailing space. */
export function escapeDnValue (value: string): string {
  let out = value.replace(/[\\"+,;<>=]/g, (c) => `\\${c}`).replace(/\0/g, '\\00')
  if (out.startsWith(' ') || out.startsWith('#')) out = `\\${out}`
  if (value.length > 1 && value.endsWith(' ')) out = `${out.slice(0, -1)}\\ `
  return out
}

export type Escape = (value: string) => string

export const escapeFilterValue: Escape = (value) => Filter.escape(value)

/** The template with each placeholder's value escaped; undefined when one has no value (no lookup is made). */
export function fillEscaped (template: TemplatePart[], values: QueryValues, escape: Escape): string | undefined {
  let out = ''
  for (const part of template) {
    if ('literal' in part) {
      out += part.literal
      continue
    }
    const value = placeholderValue(part.placeholder, values)
    if (value === undefined) return undefined
    out += escape(value)
  }
  return out
}

export { parseTemplate }
