// The plugin's settings (etc/plugins/broker_web_hook.conf): EMQ X's keys
// (`web.hook.api.url`, `web.hook.headers.<name>`, `web.hook.encode_payload`,
// `web.hook.ssl.*`, `web.hook.pool_size`, `web.hook.rule.<event>.<n>`) and
// this plugin's queue and retry keys. The header and rule keys are dynamic:
// Joi pattern keys check each one, so a broken rule is refused with its
// file:line like any other value.
import { readFile } from 'node:fs/promises'
import { resolve } from 'node:path'
import Joi from 'joi'
import { durationSetting, parseBytesize } from '../../lib/plugin-kit/index.js'
import type { PayloadEncoding } from './payload.js'
import { parseRule, RULE_PREFIX, type Rule } from './rules.js'

export const HEADER_PREFIX = 'web.hook.headers.'

export interface WebHookConfig {
  'web.hook.api.url': string
  'web.hook.encode_payload': PayloadEncoding
  'web.hook.ssl.cacertfile'?: string
  'web.hook.ssl.certfile'?: string
  'web.hook.ssl.keyfile'?: string
  'web.hook.ssl.verify': boolean
  /** connections to the endpoint, and events posted at once */
  'web.hook.pool_size': number
  /** requests under way at once on one connection (HTTP/1.1 pipelining; 1: none) */
  'web.hook.request.pipelining': number
  /** events one POST carries at most (1: one POST per event, its object; more: a JSON array) */
  'web.hook.batch_size': number
  /** milliseconds an event waits on the node for others to go to the delivery thread (and, batched, in one POST) with */
  'web.hook.batch_time': number
  /** events waiting to be posted, at most */
  'web.hook.queue_size': number
  /** bytes of waiting events (payloads, topics, ids), at most */
  'web.hook.queue_bytes': number
  /** milliseconds one attempt may take (connecting, sending, the answer) */
  'web.hook.request.timeout': number
  /** attempts after the first, for a 5xx answer or no answer */
  'web.hook.request.retry_times': number
  /** milliseconds before the first retry */
  'web.hook.request.retry_interval': number
  /** factor applied to the interval after each retry */
  'web.hook.request.retry_backoff': number
  [header: `web.hook.headers.${string}`]: string
  [rule: `web.hook.rule.${string}`]: Rule
}

export const DEFAULTS = {
  'web.hook.api.url': 'http://127.0.0.1:8080',
  'web.hook.pool_size': 32,
  'web.hook.request.pipelining': 256,
  'web.hook.batch_size': 1,
  'web.hook.batch_time': 5,
  'web.hook.queue_size': 10_000,
  'web.hook.queue_bytes': 64 * 1024 * 1024,
  'web.hook.request.timeout': 5000,
  'web.hook.request.retry_times': 3,
  'web.hook.request.retry_interval': 500,
  'web.hook.request.retry_backoff': 2
} as const

/** The queue's bytes are counted in a 32-bit integer shared with the delivery thread. */
const MAX_QUEUE_BYTES = 1024 * 1024 * 1024

const MAX_BATCH_TIME = 10_000

/** Headers the HTTP client sets itself (or that would break the request framing). */
const RESERVED_HEADERS: readonly string[] = Object.freeze(['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'expect', 'te', 'trailer', 'host'])
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/** The endpoint's URL: http or https, no credentials (EMQ X adds `http://` to a URL without a scheme). */
export function parseUrl (raw: string): string {
  const text = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `http://${raw}`
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new Error(`"${raw}" is not a URL`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`"${raw}" is not an http:// or https:// URL`)
  if (url.username !== '' || url.password !== '') throw new Error('the URL may not hold credentials: set web.hook.headers.authorization')
  if (url.hash !== '') throw new Error(`"${raw}" has a #fragment`)
  return url.href
}

function headerValue (value: string, key: string): string {
  const name = key.slice(HEADER_PREFIX.length)
  if (!TOKEN.test(name)) throw new Error(`"${name}" is not an HTTP header name`)
  if (RESERVED_HEADERS.includes(name.toLowerCase())) throw new Error(`the header ${name} is set by the HTTP client`)
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x08\x0a-\x1f\x7f]/.test(value)) throw new Error(`the value of header ${name} holds control characters`)
  return value
}

const keyOf = (helpers: Joi.CustomHelpers): string => String(helpers.state.path?.at(-1) ?? '')
// a custom rule's Error is the whole message (not "failed custom validation because …")
const custom = <S extends Joi.Schema>(schema: S): S => schema.messages({ 'any.custom': '{{#error.message}}' }) as S

const file = (): Joi.StringSchema => Joi.string().trim().allow('').empty('')
/** A client certificate and its key go together: the one given alone is refused, at its own line. */
const pairedFile = (other: string): Joi.StringSchema => custom(file().custom((path: string, helpers) => {
  const sibling: unknown = (helpers.state.ancestors as Array<Record<string, unknown>>)[0]?.[other]
  if (typeof sibling !== 'string' || sibling.trim() === '') throw new Error(`needs ${other} too (a client certificate and its key go together)`)
  return path
}))

export const schema = Joi.object<WebHookConfig>({
  'web.hook.api.url': custom(Joi.string().trim().custom((raw: string) => parseUrl(raw))).default(parseUrl(DEFAULTS['web.hook.api.url'])),
  'web.hook.encode_payload': Joi.string().trim().lowercase().valid('none', 'base64', 'base62').empty('').default('none'),
  'web.hook.ssl.cacertfile': file(),
  'web.hook.ssl.certfile': pairedFile('web.hook.ssl.keyfile'),
  'web.hook.ssl.keyfile': pairedFile('web.hook.ssl.certfile'),
  'web.hook.ssl.verify': Joi.boolean().default(true),
  'web.hook.pool_size': Joi.number().integer().min(1).max(1024).default(DEFAULTS['web.hook.pool_size']),
  'web.hook.request.pipelining': Joi.number().integer().min(1).max(1000).default(DEFAULTS['web.hook.request.pipelining']),
  'web.hook.batch_size': Joi.number().integer().min(1).max(10_000).default(DEFAULTS['web.hook.batch_size']),
  'web.hook.batch_time': custom(durationSetting(DEFAULTS['web.hook.batch_time'], 1, { ms: MAX_BATCH_TIME, said: '10s' })),
  'web.hook.queue_size': Joi.number().integer().min(1).max(10_000_000).default(DEFAULTS['web.hook.queue_size']),
  'web.hook.queue_bytes': custom(Joi.any().custom((raw: unknown) => {
    const bytes = parseBytesize(String(raw).trim())
    if (bytes < 1024) throw new Error(`"${String(raw)}" is less than 1KB`)
    if (bytes > MAX_QUEUE_BYTES) throw new Error(`"${String(raw)}" is more than 1GB`)
    return bytes
  })).default(DEFAULTS['web.hook.queue_bytes']),
  'web.hook.request.timeout': durationSetting(DEFAULTS['web.hook.request.timeout'], 1),
  'web.hook.request.retry_times': Joi.number().integer().min(0).max(10).default(DEFAULTS['web.hook.request.retry_times']),
  'web.hook.request.retry_interval': durationSetting(DEFAULTS['web.hook.request.retry_interval'], 0),
  'web.hook.request.retry_backoff': Joi.number().min(1).max(10).default(DEFAULTS['web.hook.request.retry_backoff'])
})
  .pattern(/^web\.hook\.headers\./, custom(Joi.string().custom((value: string, helpers) => headerValue(value, keyOf(helpers)))))
  .pattern(/^web\.hook\.rule\./, custom(Joi.string().custom((text: string, helpers) => parseRule(keyOf(helpers), text))))

/** The rules the settings hold, in key order. */
export function rulesOf (config: WebHookConfig): Rule[] {
  return Object.keys(config).filter((key) => key.startsWith(RULE_PREFIX)).sort().map((key) => config[key as `web.hook.rule.${string}`])
}

/** The extra headers, by name as written. */
export function headersOf (config: WebHookConfig): Record<string, string> {
  const headers: Record<string, string> = {}
  for (const key of Object.keys(config)) {
    if (key.startsWith(HEADER_PREFIX)) headers[key.slice(HEADER_PREFIX.length)] = config[key as `web.hook.headers.${string}`]
  }
  return headers
}

export interface TlsFiles { ca?: string, cert?: string, key?: string }

/** Reads the TLS files the settings name (relative paths from the install root); throws naming the file that cannot be read. */
export async function readTlsFiles (config: WebHookConfig, root: string): Promise<TlsFiles> {
  const read = async (key: 'web.hook.ssl.cacertfile' | 'web.hook.ssl.certfile' | 'web.hook.ssl.keyfile'): Promise<string | undefined> => {
    const path = config[key]
    if (path === undefined) return undefined
    try {
      return await readFile(resolve(root, path), 'utf8')
    } catch (err) {
      throw new Error(`${key}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? String(err)})`, { cause: err })
    }
  }
  return { ca: await read('web.hook.ssl.cacertfile'), cert: await read('web.hook.ssl.certfile'), key: await read('web.hook.ssl.keyfile') }
}
