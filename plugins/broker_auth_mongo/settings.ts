// The plugin's settings (etc/plugins/broker_auth_mongo.conf): EMQ X 3.x
// emqx_auth_mongo's keys and defaults, plus the shared database-plugin keys
// (query_timeout, unavailable.auth, unavailable.acl) from
// lib/access/backend/settings.ts. Validated and converted by Joi.
import Joi from 'joi'
import { commonKeys, parseServer, passwordHashSetting, switchSetting, usesSalt, type ServerAddress, type UnavailableAcl, type UnavailableAuth } from '../../lib/plugin-kit/index.js'
import { parseSelector, type Selector } from './selector.js'

export type TopologyType = 'single' | 'unknown' | 'sharded' | 'rs'

export const PREFIX = 'auth.mongo'
export const DEFAULT_PORT = 27017

export interface AuthMongoConfig {
  'auth.mongo.type': TopologyType
  'auth.mongo.rs_set_name'?: string
  'auth.mongo.server': ServerAddress[]
  'auth.mongo.pool': number
  'auth.mongo.login'?: string
  'auth.mongo.password'?: string
  'auth.mongo.auth_source': string
  'auth.mongo.database': string
  /** milliseconds a query may take (shared key) */
  'auth.mongo.query_timeout': number
  'auth.mongo.unavailable.auth': UnavailableAuth
  'auth.mongo.unavailable.acl': UnavailableAcl
  'auth.mongo.auth_query.collection': string
  /** the password field, then the salt field when there is one */
  'auth.mongo.auth_query.password_field': string[]
  'auth.mongo.auth_query.password_hash': string
  'auth.mongo.auth_query.selector': Selector
  'auth.mongo.super_query': boolean
  'auth.mongo.super_query.collection': string
  'auth.mongo.super_query.super_field': string
  'auth.mongo.super_query.selector': Selector
  'auth.mongo.acl_query': boolean
  'auth.mongo.acl_query.collection': string
  'auth.mongo.acl_query.selector'?: Selector
  /** `auth.mongo.acl_query.selector.<n>`: further ACL selectors, ORed with the others */
  [numbered: `auth.mongo.acl_query.selector.${number}`]: Selector
}

export const DEFAULTS = {
  'auth.mongo.type': 'single',
  'auth.mongo.server': '127.0.0.1:27017',
  'auth.mongo.pool': 8,
  'auth.mongo.auth_source': 'mqtt',
  'auth.mongo.database': 'mqtt',
  'auth.mongo.auth_query.collection': 'mqtt_user',
  'auth.mongo.auth_query.password_field': 'password',
  'auth.mongo.auth_query.password_hash': 'sha256',
  'auth.mongo.auth_query.selector': 'username=%u',
  'auth.mongo.super_query': true,
  'auth.mongo.super_query.collection': 'mqtt_user',
  'auth.mongo.super_query.super_field': 'is_superuser',
  'auth.mongo.super_query.selector': 'username=%u',
  'auth.mongo.acl_query': true,
  'auth.mongo.acl_query.collection': 'mqtt_acl',
  'auth.mongo.acl_query.selector': 'username=%u'
} as const

const NUMBERED_SELECTOR = /^auth\.mongo\.acl_query\.selector\.[1-9][0-9]*$/

const name = (def: string): Joi.StringSchema => Joi.string().trim().min(1).pattern(/^[^$\0]/, 'a name not starting with $').default(def)

const selector = (def?: string): Joi.AnySchema => {
  const schema = Joi.any().custom((raw: unknown) => {
    if (typeof raw !== 'string') throw new Error('it is not field=value pairs')
    return parseSelector(raw)
  })
  return def === undefined ? schema : schema.default(parseSelector(def))
}

const servers = Joi.any().custom((raw: unknown) => {
  if (typeof raw !== 'string') throw new Error('it is not a host:port list')
  return raw.split(',').map((item) => parseServer(item, DEFAULT_PORT))
}).default(DEFAULTS['auth.mongo.server'].split(',').map((item) => parseServer(item, DEFAULT_PORT)))

const passwordField = Joi.any().custom((raw: unknown) => {
  if (typeof raw !== 'string') throw new Error('it is not a field list')
  const fields = raw.split(',').map((f) => f.trim())
  if (fields.length > 2 || fields.some((f) => f === '' || f.startsWith('$'))) throw new Error('it must be "password" or "password,salt" (field names)')
  return fields
}).default([DEFAULTS['auth.mongo.auth_query.password_field']])

const optionalText = (): Joi.StringSchema => Joi.string().allow('').empty('')

export const schema = Joi.object<AuthMongoConfig>({
  'auth.mongo.type': Joi.string().trim().lowercase().valid('single', 'unknown', 'sharded', 'rs').default(DEFAULTS['auth.mongo.type']),
  'auth.mongo.rs_set_name': optionalText().trim(),
  'auth.mongo.server': servers,
  ...commonKeys(PREFIX, { pool: DEFAULTS['auth.mongo.pool'] }),
  'auth.mongo.login': optionalText(),
  'auth.mongo.password': optionalText(),
  'auth.mongo.auth_source': name(DEFAULTS['auth.mongo.auth_source']),
  'auth.mongo.database': name(DEFAULTS['auth.mongo.database']),
  'auth.mongo.auth_query.collection': name(DEFAULTS['auth.mongo.auth_query.collection']),
  'auth.mongo.auth_query.password_field': passwordField,
  'auth.mongo.auth_query.password_hash': passwordHashSetting(DEFAULTS['auth.mongo.auth_query.password_hash']),
  'auth.mongo.auth_query.selector': selector(DEFAULTS['auth.mongo.auth_query.selector']),
  'auth.mongo.super_query': switchSetting(DEFAULTS['auth.mongo.super_query']),
  'auth.mongo.super_query.collection': name(DEFAULTS['auth.mongo.super_query.collection']),
  'auth.mongo.super_query.super_field': name(DEFAULTS['auth.mongo.super_query.super_field']),
  'auth.mongo.super_query.selector': selector(DEFAULTS['auth.mongo.super_query.selector']),
  'auth.mongo.acl_query': switchSetting(DEFAULTS['auth.mongo.acl_query']),
  'auth.mongo.acl_query.collection': name(DEFAULTS['auth.mongo.acl_query.collection']),
  'auth.mongo.acl_query.selector': selector()
})
  .pattern(NUMBERED_SELECTOR, selector())
  .custom((config: AuthMongoConfig) => {
    if (config['auth.mongo.type'] === 'rs' && config['auth.mongo.rs_set_name'] === undefined) throw new Error('auth.mongo.type = rs needs auth.mongo.rs_set_name')
    if (config['auth.mongo.type'] === 'single' && config['auth.mongo.server'].length > 1) throw new Error('auth.mongo.type = single takes one auth.mongo.server (use unknown, sharded or rs for several)')
    const hash = config['auth.mongo.auth_query.password_hash']
    if (usesSalt(hash) && config['auth.mongo.auth_query.password_field'].length < 2) {
      throw new Error(`auth.mongo.auth_query.password_hash = ${hash} needs a salt field: auth.mongo.auth_query.password_field = password,salt`)
    }
    return config
  })

/** The ACL selectors: `acl_query.selector` (default `username=%u` when no numbered one is set), then `.1`, `.2` … in order. */
export function aclSelectors (config: AuthMongoConfig): Selector[] {
  const numbered = Object.keys(config)
    .filter((key) => NUMBERED_SELECTOR.test(key))
    .sort((a, b) => Number(a.slice(a.lastIndexOf('.') + 1)) - Number(b.slice(b.lastIndexOf('.') + 1)))
    .map((key) => (config as unknown as Record<string, Selector>)[key]!)
  const plain = config['auth.mongo.acl_query.selector']
  if (plain !== undefined) return [plain, ...numbered]
  return numbered.length > 0 ? numbered : [parseSelector(DEFAULTS['auth.mongo.acl_query.selector'])]
}
