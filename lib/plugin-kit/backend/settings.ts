// The settings every database auth plugin shares, as Joi pieces for its
// schema: `<prefix>.pool`, `<prefix>.query_timeout`, `<prefix>.unavailable.auth`
// and `<prefix>.unavailable.acl`, plus server addresses and durations.
import Joi from 'joi'
import { parseBytesize, parseDuration } from '../../config/types.js'

export type UnavailableAuth = 'deny' | 'ignore'
export type UnavailableAcl = 'ignore' | 'deny'

export const COMMON_DEFAULTS = {
  pool: 8,
  query_timeout: 5000,
  'unavailable.auth': 'deny',
  'unavailable.acl': 'ignore'
} as const

/** The longest a duration setting may be, and how its error says it (`it is longer than <said>`). */
export interface LongestDuration { ms: number, said: string }

/** `5s`, `500ms`, `1m`, or a bare number of seconds (as in etc/broker.conf) → milliseconds, at least `min`, at most `longest`. */
export function durationSetting (def: number, min = 1, longest?: LongestDuration): Joi.AnySchema {
  return Joi.any().custom((raw: unknown) => {
    if (typeof raw !== 'string' && typeof raw !== 'number') throw new Error('it is not a duration (e.g. 5s or 500ms)')
    const ms = parseDuration(String(raw).trim())
    if (ms < min) throw new Error(`"${raw}" is shorter than ${min}ms`)
    if (longest !== undefined && ms > longest.ms) throw new Error(`it is longer than ${longest.said}`)
    return ms
  }).default(def)
}

/** `1MB`, `64KB`, or a bare number of bytes (as in etc/broker.conf) → bytes. */
export function bytesizeSetting (def: number): Joi.AnySchema {
  return Joi.any().custom((raw: unknown) => {
    if (typeof raw !== 'string' && typeof raw !== 'number') throw new Error('it is not a size (e.g. 1MB, 64KB, or bytes)')
    const bytes = parseBytesize(String(raw).trim())
    if (!Number.isSafeInteger(bytes)) throw new Error(`"${raw}" is too large`)
    return bytes
  }).default(def)
}

export function poolSetting (def: number = COMMON_DEFAULTS.pool): Joi.NumberSchema {
  return Joi.number().integer().min(1).max(1024).default(def)
}

export interface ServerAddress { host: string, port: number }

/** `host:port`, `host` (default port) or `[v6]:port` → `{ host, port }`. */
export function parseServer (text: string, defaultPort: number): ServerAddress {
  const raw = text.trim()
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(raw)
  let host: string
  let port: string | undefined
  if (v6 !== null) {
    host = v6[1]
    port = v6[2]
  } else {
    const colon = raw.lastIndexOf(':')
    const bareV6 = raw.indexOf(':') !== colon
    host = colon < 0 || bareV6 ? raw : raw.slice(0, colon)
    port = colon < 0 || bareV6 ? undefined : raw.slice(colon + 1)
  }
  if (host === '' || /\s|,/.test(host)) throw new Error(`"${text}" is not a host or host:port`)
  const number = port === undefined ? defaultPort : Number(port)
  if (!/^\d+$/.test(port ?? '0') || !Number.isInteger(number) || number < 1 || number > 65535) throw new Error(`"${text}" has no valid port`)
  return { host, port: number }
}

export function serverSetting (def: string, defaultPort: number): Joi.AnySchema {
  return Joi.any().custom((raw: unknown) => {
    if (typeof raw !== 'string') throw new Error('it is not host:port')
    return parseServer(raw, defaultPort)
  }).default(parseServer(def, defaultPort))
}

/** The text of a `ServerAddress` for logs and alarms. */
export function serverText (server: ServerAddress): string {
  return server.host.includes(':') ? `[${server.host}]:${server.port}` : `${server.host}:${server.port}`
}

export interface CommonSettings {
  pool: number
  /** milliseconds a query may take before it counts as failed */
  queryTimeout: number
  /** what authentication answers while the server is unavailable: deny (server_unavailable) or ignore */
  unavailableAuth: UnavailableAuth
  /** what an ACL check answers while the server is unavailable */
  unavailableAcl: UnavailableAcl
}

/** The common keys under `prefix` (e.g. `auth.mysql`), to spread into a plugin's Joi object. */
export function commonKeys (prefix: string, defaults: { pool?: number, queryTimeout?: number } = {}): Record<string, Joi.Schema> {
  return {
    [`${prefix}.pool`]: poolSetting(defaults.pool),
    [`${prefix}.query_timeout`]: durationSetting(defaults.queryTimeout ?? COMMON_DEFAULTS.query_timeout),
    [`${prefix}.unavailable.auth`]: Joi.string().trim().lowercase().valid('deny', 'ignore').default(COMMON_DEFAULTS['unavailable.auth']),
    [`${prefix}.unavailable.acl`]: Joi.string().trim().lowercase().valid('ignore', 'deny').default(COMMON_DEFAULTS['unavailable.acl'])
  }
}

/** The common settings of a validated config. */
export function commonSettings (config: Readonly<Record<string, unknown>>, prefix: string): CommonSettings {
  return {
    pool: config[`${prefix}.pool`] as number,
    queryTimeout: config[`${prefix}.query_timeout`] as number,
    unavailableAuth: config[`${prefix}.unavailable.auth`] as UnavailableAuth,
    unavailableAcl: config[`${prefix}.unavailable.acl`] as UnavailableAcl
  }
}

/** Joi for an on/off switch (`on`, `off`, `true`, `false`). */
export function switchSetting (def: boolean): Joi.BooleanSchema {
  return Joi.boolean().truthy('on', 'ON', 'yes').falsy('off', 'OFF', 'no').default(def)
}
