// The plugin's settings (etc/plugins/broker_auth_http.conf): the Joi schema
// that validates and converts them, and the §2.15 description of the nine
// request keys for the management API.
import Joi from 'joi'
import { durationSetting } from '../../lib/plugin-kit/index.js'
import { parseParams } from './params.js'

export type Method = 'get' | 'post'

export interface AuthHttpConfig {
  'auth.http.auth_req': string
  'auth.http.auth_req.method': Method
  'auth.http.auth_req.params': string
  /** unset or empty: no superuser request */
  'auth.http.super_req'?: string
  'auth.http.super_req.method': Method
  'auth.http.super_req.params': string
  /** unset or empty: no `client.check_acl` handler */
  'auth.http.acl_req'?: string
  'auth.http.acl_req.method': Method
  'auth.http.acl_req.params': string
  /** milliseconds one HTTP call may take, retries included */
  'auth.http.request.timeout': number
  /** extra attempts after a connection failure (never after an HTTP answer or a timeout) */
  'auth.http.request.retry_times': number
  /** milliseconds before the first retry */
  'auth.http.request.retry_interval': number
  /** factor applied to the interval after each retry */
  'auth.http.request.retry_backoff': number
  /** most sockets open at once per server (keep-alive pool) */
  'auth.http.pool_size': number
  /** what authentication and ACL checks answer when the server gives no HTTP answer (down, refused, timed out) */
  'auth.http.failure': 'deny' | 'ignore'
}

export const DEFAULTS = {
  'auth.http.auth_req.method': 'post',
  'auth.http.auth_req.params': 'clientid=%c,username=%u,password=%P',
  'auth.http.super_req.method': 'post',
  'auth.http.super_req.params': 'clientid=%c,username=%u',
  'auth.http.acl_req.method': 'get',
  'auth.http.acl_req.params': 'access=%A,username=%u,clientid=%c,ipaddr=%a,topic=%t',
  'auth.http.request.timeout': 5000,
  'auth.http.request.retry_times': 3,
  'auth.http.request.retry_interval': 100,
  'auth.http.request.retry_backoff': 2,
  'auth.http.pool_size': 8,
  'auth.http.failure': 'deny'
} as const

const url = (): Joi.StringSchema => Joi.string().trim().uri({ scheme: ['http', 'https'] })
const method = (def: Method): Joi.StringSchema => Joi.string().trim().lowercase().valid('get', 'post').default(def)

// A custom rule that throws becomes the error `"<key>" failed custom validation because <message>`.
const params = (def: string): Joi.StringSchema => Joi.string().trim().custom((raw: string) => {
  parseParams(raw)
  return raw
}).default(def)

export const schema = Joi.object<AuthHttpConfig>({
  'auth.http.auth_req': url().required(),
  'auth.http.auth_req.method': method(DEFAULTS['auth.http.auth_req.method']),
  'auth.http.auth_req.params': params(DEFAULTS['auth.http.auth_req.params']),
  'auth.http.super_req': url().allow('').empty(''),
  'auth.http.super_req.method': method(DEFAULTS['auth.http.super_req.method']),
  'auth.http.super_req.params': params(DEFAULTS['auth.http.super_req.params']),
  'auth.http.acl_req': url().allow('').empty(''),
  'auth.http.acl_req.method': method(DEFAULTS['auth.http.acl_req.method']),
  'auth.http.acl_req.params': params(DEFAULTS['auth.http.acl_req.params']),
  'auth.http.request.timeout': durationSetting(DEFAULTS['auth.http.request.timeout'], 1),
  'auth.http.request.retry_times': Joi.number().integer().min(0).max(10).default(DEFAULTS['auth.http.request.retry_times']),
  'auth.http.request.retry_interval': durationSetting(DEFAULTS['auth.http.request.retry_interval'], 0),
  'auth.http.request.retry_backoff': Joi.number().min(1).max(10).default(DEFAULTS['auth.http.request.retry_backoff']),
  'auth.http.pool_size': Joi.number().integer().min(1).max(1024).default(DEFAULTS['auth.http.pool_size']),
  'auth.http.failure': Joi.string().trim().lowercase().valid('deny', 'ignore').default(DEFAULTS['auth.http.failure'])
})

/** A §2.15 plugin configuration item. */
export interface SettingItem {
  key: string
  value: string
  desc: string
  required: boolean
}

const DESCRIPTIONS: ReadonlyArray<readonly [key: string, desc: string]> = Object.freeze([
  ['auth.http.auth_req', 'URL of the authentication request'],
  ['auth.http.auth_req.method', 'HTTP method of the authentication request: get | post'],
  ['auth.http.auth_req.params', 'Parameters of the authentication request: comma-separated name=value pairs; variables %u username, %c client id, %a IP address, %P password'],
  ['auth.http.super_req', 'URL of the superuser request (empty: no superuser check)'],
  ['auth.http.super_req.method', 'HTTP method of the superuser request: get | post'],
  ['auth.http.super_req.params', 'Parameters of the superuser request: comma-separated name=value pairs; variables %u username, %c client id, %a IP address'],
  ['auth.http.acl_req', 'URL of the ACL request (empty: no ACL check by HTTP)'],
  ['auth.http.acl_req.method', 'HTTP method of the ACL request: get | post'],
  ['auth.http.acl_req.params', 'Parameters of the ACL request: comma-separated name=value pairs; variables %A access (1 subscribe, 2 publish), %u username, %c client id, %a IP address, %t topic']
])

/**
 * The nine request settings as §2.15 items. `settings` is what the conf file
 * sets (key → text; a validated config works too). A key that is set (not
 * empty) is `required: true`, as EMQ X reported uncommented keys; an unset
 * key shows its default (empty for the URLs).
 */
export function describeSettings (settings: Readonly<Record<string, unknown>>): SettingItem[] {
  return DESCRIPTIONS.map(([key, desc]) => {
    const set = settings[key]
    const given = set !== undefined && set !== null && String(set) !== ''
    const fallback = (DEFAULTS as Readonly<Record<string, string | number>>)[key] ?? ''
    return { key, value: given ? String(set) : String(fallback), desc, required: given }
  })
}
