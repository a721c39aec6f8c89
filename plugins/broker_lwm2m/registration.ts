// The Client Registration interface's parameters (LwM2M 1.0 §5.3, §8.2.3):
// Register is `POST /rd?ep=<name>&lt=<s>&lwm2m=1.0&b=U&sms=…` with the
// client's objects as a link-format payload (`</1/0>,</3/0>,</4>`, an
// alternate root as `</lwm2m>;rt="oma.lwm2m"`); Update is `POST /rd/<location>`
// with any of lt, b, sms and maybe the objects; De-register `DELETE /rd/<location>`.
import { splitLinks } from './content.js'

export const BINDINGS: readonly string[] = Object.freeze(['U', 'UQ', 'S', 'SQ', 'US', 'UQS'])
/** an endpoint name longer than this is refused (it is the client id and a topic level) */
const MAX_ENDPOINT = 256
const MAX_OBJECTS = 1024
const DEFAULT_LIFETIME_S = 86_400

export interface Registration {
  ep: string
  /** seconds */
  lt: number
  lwm2m: string
  b: string
  sms?: string
  alternatePath: string
  objectList: string[]
}

export type RegistrationUpdate = Partial<Pick<Registration, 'lt' | 'b' | 'sms' | 'objectList' | 'alternatePath'>>

export class RegistrationError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'RegistrationError'
  }
}

/** Uri-Query parts `name=value` → a map (a repeated name: the last). */
export function queryOf (parts: readonly string[]): Map<string, string> {
  const query = new Map<string, string>()
  for (const part of parts) {
    const at = part.indexOf('=')
    query.set(at < 0 ? part : part.slice(0, at), at < 0 ? '' : part.slice(at + 1))
  }
  return query
}

/** A Register request's query and payload; throws a RegistrationError saying what is wrong. */
export function parseRegister (query: Map<string, string>, payload: Buffer): Registration {
  const ep = query.get('ep')
  if (ep === undefined || ep === '') throw new RegistrationError('no endpoint name (ep)')
  if (ep.length > MAX_ENDPOINT || /[+#/]/.test(ep) || ep.includes('\u0000')) throw new RegistrationError(`endpoint name ${JSON.stringify(ep.slice(0, 64))} is longer than ${MAX_ENDPOINT} or holds + # / or NUL`)
  const lwm2m = query.get('lwm2m') ?? '1.0'
  if (!/^1\.0(\.\d+)?$/.test(lwm2m)) throw new RegistrationError(`LwM2M version ${JSON.stringify(lwm2m)} is not 1.0`)
  const update = parseUpdate(query, payload)
  return {
    ep,
    lt: update.lt ?? DEFAULT_LIFETIME_S,
    lwm2m,
    b: update.b ?? 'U',
    ...(update.sms === undefined ? {} : { sms: update.sms }),
    alternatePath: update.alternatePath ?? '/',
    objectList: update.objectList ?? []
  }
}

/** An Update request's query and payload: only what it carries. */
export function parseUpdate (query: Map<string, string>, payload: Buffer): RegistrationUpdate {
  const update: RegistrationUpdate = {}
  const lt = query.get('lt')
  if (lt !== undefined) {
    if (!/^\d{1,10}$/.test(lt)) throw new RegistrationError(`lifetime ${JSON.stringify(lt)} is not a number of seconds`)
    update.lt = Number(lt)
  }
  const b = query.get('b')
  if (b !== undefined) {
    if (!BINDINGS.includes(b)) throw new RegistrationError(`binding ${JSON.stringify(b)} is not one of ${BINDINGS.join(', ')}`)
    update.b = b
  }
  const sms = query.get('sms')
  if (sms !== undefined) update.sms = sms.slice(0, 64)
  if (payload.length > 0) Object.assign(update, parseObjectLinks(payload.toString('utf8')))
  return update
}

/** `</lwm2m>;rt="oma.lwm2m",</lwm2m/1/0>,</lwm2m/3/0>` → the alternate path and `/1/0`, `/3/0`. */
export function parseObjectLinks (text: string): { alternatePath: string, objectList: string[] } {
  const links = splitLinks(text)
  if (links.length > MAX_OBJECTS) throw new RegistrationError(`more than ${MAX_OBJECTS} object links`)
  let alternatePath = '/'
  const targets: string[] = []
  for (const link of links) {
    const m = /^<([^>]*)>(.*)$/.exec(link)
    if (m === null) throw new RegistrationError(`${JSON.stringify(link.slice(0, 64))} is not a link (<path>;attributes)`)
    if (/;\s*rt="?oma\.lwm2m"?/.test(m[2])) alternatePath = m[1] === '' ? '/' : m[1]
    else targets.push(m[1])
  }
  const root = alternatePath === '/' ? '' : alternatePath.replace(/\/$/, '')
  const objectList: string[] = []
  for (const target of targets) {
    const path = root !== '' && target.startsWith(`${root}/`) ? target.slice(root.length) : target
    if (!/^(\/\d{1,5}){1,2}$/.test(path)) throw new RegistrationError(`object link ${JSON.stringify(target.slice(0, 64))} is not </object> or </object/instance>`)
    objectList.push(path)
  }
  return { alternatePath, objectList }
}
