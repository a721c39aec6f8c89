// How values are escaped when fillTemplate (lib/access/backend/placeholders.ts)
// puts them into a DN (RFC 4514) or a search filter (RFC 4515), so a user name
// is always one attribute value: `admin,ou=x` stays the value `admin\,ou\=x`,
// `*)(uid=*` stays `\2a\29\28uid=\2a`.
import { Filter } from 'ldapts'

/** RFC 4514 §2.4: escape `"+,;<>\=`, NUL, a leading space or `#`, a trailing space. */
export function escapeDnValue (value: string): string {
  let out = value.replace(/[\\"+,;<>=]/g, (c) => `\\${c}`).replace(/\0/g, '\\00')
  if (out.startsWith(' ') || out.startsWith('#')) out = `\\${out}`
  if (value.length > 1 && value.endsWith(' ')) out = `${out.slice(0, -1)}\\ `
  return out
}

export type Escape = (value: string) => string

export const escapeFilterValue: Escape = (value) => Filter.escape(value)

