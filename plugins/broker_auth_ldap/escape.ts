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


/** RFC 4514 §3: runs of `\XX` hex pairs (UTF-8 bytes) and `\<char>` back to the value. */
function unescapeDnValue (escaped: string): string {
  return escaped.replace(/((?:\\[0-9a-fA-F]{2})+)|\\(.)/gsu, (_, hex: string | undefined, char: string) =>
    hex !== undefined ? Buffer.from(hex.replaceAll('\\', ''), 'hex').toString('utf8') : char)
}

/**
 * The value of `attribute` in a DN's first RDN (`cn=alice,ou=device,…` → alice
 * for `cn`), as the directory stores it; undefined when the first RDN has no
 * such attribute.
 */
export function firstRdnValue (dn: string, attribute: string): string | undefined {
  const avas: string[] = []
  let start = 0
  for (let i = 0; i <= dn.length; i++) {
    if (dn[i] === '\\') {
      i++
      continue
    }
    if (i < dn.length && dn[i] !== '+' && dn[i] !== ',') continue
    avas.push(dn.slice(start, i))
    if (i === dn.length || dn[i] === ',') break
    start = i + 1
  }
  for (const ava of avas) {
    const eq = ava.indexOf('=')
    if (eq > 0 && ava.slice(0, eq).trim().toLowerCase() === attribute.toLowerCase()) return unescapeDnValue(ava.slice(eq + 1))
  }
  return undefined
}
