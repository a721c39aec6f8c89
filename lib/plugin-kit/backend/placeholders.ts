// Query placeholders of the database auth plugins (EMQ X 3.x): `%u` user
// name, `%c` client id, `%a` IP address, `%P` password, `%C` TLS certificate
// common name, `%d` TLS certificate subject. Backends bind the values as
// parameters (SQL `?`/`$n`, one Redis argument, a Mongo selector value, an
// escaped LDAP filter value) — never by pasting them into query text.
//
// An absent value (no user name, no password, no certificate) is `undefined`
// here. As in EMQ X, where such a variable was bound as `undefined`/NULL, it
// makes the part of the query that uses it match nothing: SQL binds NULL
// (`username = NULL` is never true), the other backends do not send a
// lookup whose key needs it and treat it as "not found".
import type { ClientInfo } from '../../hooks/types.js'

export interface QueryValues {
  username?: string
  clientId: string
  ipAddress: string
  password?: string
  certCommonName?: string
  certSubject?: string
}

export type Placeholder = '%u' | '%c' | '%a' | '%P' | '%C' | '%d'

export type TemplatePart = { literal: string } | { placeholder: Placeholder }

export const PLACEHOLDERS: readonly Placeholder[] = ['%u', '%c', '%a', '%P', '%C', '%d']

export function isPlaceholder (text: string): text is Placeholder {
  return (PLACEHOLDERS as readonly string[]).includes(text)
}

/** Splits a template into literal text and placeholders; an unknown `%x` (or a lone `%`) stays literal. */
export function parseTemplate (template: string): TemplatePart[] {
  const parts: TemplatePart[] = []
  let literal = ''
  for (let i = 0; i < template.length; i++) {
    const pair = template.slice(i, i + 2)
    if (isPlaceholder(pair)) {
      if (literal !== '') parts.push({ literal })
      literal = ''
      parts.push({ placeholder: pair })
      i++
    } else {
      literal += template[i]
    }
  }
  if (literal !== '') parts.push({ literal })
  return parts
}

/** The value of one placeholder; undefined when the client has none (see the top of this file). */
export function placeholderValue (placeholder: Placeholder, values: QueryValues): string | undefined {
  switch (placeholder) {
    case '%u': return values.username
    case '%c': return values.clientId
    case '%a': return values.ipAddress
    case '%P': return values.password
    case '%C': return values.certCommonName
    case '%d': return values.certSubject
  }
}

/**
 * The template with every placeholder filled (each value through `escape`,
 * e.g. LDAP's DN or filter escaping); undefined when one of them has no value.
 */
export function fillTemplate (template: string | TemplatePart[], values: QueryValues, escape: (value: string) => string = (value) => value): string | undefined {
  const parts = typeof template === 'string' ? parseTemplate(template) : template
  let out = ''
  for (const part of parts) {
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

/** The `CN` of a subject written `C=SE,O=x,CN=name` (as lib/listeners/conn-info.ts writes it). */
function commonNameOf (subject: string): string | undefined {
  for (const field of subject.split(',')) {
    const eq = field.indexOf('=')
    if (eq > 0 && field.slice(0, eq).trim() === 'CN') return field.slice(eq + 1)
  }
  return undefined
}

export function valuesOf (client: ClientInfo, password?: Buffer): QueryValues {
  const cert = client.peercert === 'nossl' || client.peercert === 'undefined' || client.peercert === '' ? undefined : client.peercert
  const values: QueryValues = { clientId: client.clientId, ipAddress: client.ipAddress }
  if (client.username !== undefined) values.username = client.username
  if (password !== undefined) values.password = password.toString('utf8')
  if (cert !== undefined) {
    values.certSubject = cert
    const cn = commonNameOf(cert)
    if (cn !== undefined) values.certCommonName = cn
  }
  return values
}

/**
 * An SQL template with its placeholders turned into bound parameters:
 * `'%u'` (a string literal that is exactly one placeholder, as EMQ X's
 * default queries write them) and a bare `%u` outside any literal each become
 * one parameter, written by `marker(index)` (index from 1: mysql `() => '?'`,
 * pgsql `(i) => '$' + i`). A placeholder inside a longer literal
 * (`'a%u'`) stays text. Quoted identifiers are copied as they are. An absent
 * value is bound as NULL.
 */
export function sqlWithParameters (template: string, values: QueryValues, marker: (index: number) => string): { text: string, params: Array<string | null> } {
  const params: Array<string | null> = []
  const bind = (placeholder: Placeholder): string => {
    params.push(placeholderValue(placeholder, values) ?? null)
    return marker(params.length)
  }
  let text = ''
  let i = 0
  while (i < template.length) {
    const c = template[i]
    if (c === "'" || c === '"' || c === '`') {
      const end = quotedEnd(template, i)
      const body = template.slice(i + 1, end - 1)
      text += c === "'" && isPlaceholder(body) ? bind(body) : template.slice(i, end)
      i = end
      continue
    }
    const pair = template.slice(i, i + 2)
    if (isPlaceholder(pair)) {
      text += bind(pair)
      i += 2
      continue
    }
    text += c
    i++
  }
  return { text, params }
}

/** The index after the quote closing the one at `start` (a doubled quote or a backslash escapes it). */
function quotedEnd (text: string, start: number): number {
  const quote = text[start]
  for (let i = start + 1; i < text.length; i++) {
    if (text[i] === '\\') {
      i++
      continue
    }
    if (text[i] !== quote) continue
    if (text[i + 1] === quote) {
      i++
      continue
    }
    return i + 1
  }
  return text.length
}
