// The plugin's settings (etc/plugins/broker_auth_pgsql.conf), EMQ X 3.x
// emqx_auth_pgsql keys and defaults, plus the common database-plugin keys
// (lib/access/backend/settings.ts).
import Joi from 'joi'
import { commonKeys, passwordHashSetting, serverSetting, switchSetting, usesSalt, type ServerAddress, type UnavailableAcl, type UnavailableAuth } from '../../lib/plugin-kit/index.js'

export interface AuthPgsqlConfig {
  'auth.pgsql.server': ServerAddress
  'auth.pgsql.pool': number
  'auth.pgsql.username': string
  'auth.pgsql.password'?: string
  'auth.pgsql.database': string
  'auth.pgsql.encoding': string
  'auth.pgsql.ssl': boolean
  'auth.pgsql.ssl_opts.keyfile'?: string
  'auth.pgsql.ssl_opts.certfile'?: string
  'auth.pgsql.ssl_opts.cacertfile'?: string
  'auth.pgsql.query_timeout': number
  'auth.pgsql.auth_query': string
  'auth.pgsql.password_hash': string
  /** empty: no superuser query */
  'auth.pgsql.super_query': string
  /** unset or empty: no ACL */
  'auth.pgsql.acl_query'?: string
  'auth.pgsql.unavailable.auth': UnavailableAuth
  'auth.pgsql.unavailable.acl': UnavailableAcl
}

export const DEFAULTS = {
  'auth.pgsql.server': '127.0.0.1:5432',
  'auth.pgsql.username': 'root',
  'auth.pgsql.database': 'mqtt',
  'auth.pgsql.encoding': 'utf8',
  'auth.pgsql.auth_query': "select password from mqtt_user where username = '%u' limit 1",
  'auth.pgsql.salted_auth_query': "select password, salt from mqtt_user where username = '%u' limit 1",
  'auth.pgsql.password_hash': 'sha256',
  'auth.pgsql.super_query': "select is_superuser from mqtt_user where username = '%u' limit 1",
  /** what the shipped conf file sets; the schema has no default (unset: no ACL) */
  'auth.pgsql.acl_query': "select allow, ipaddr, username, clientid, access, topic from mqtt_acl where ipaddr = '%a' or username = '%u' or username = '$all' or clientid = '%c'"
} as const

function defaultAuthQuery (parent: Record<string, unknown>): string {
  try {
    const hash = String(parent['auth.pgsql.password_hash'] ?? DEFAULTS['auth.pgsql.password_hash'])
    return usesSalt(hash) ? DEFAULTS['auth.pgsql.salted_auth_query'] : DEFAULTS['auth.pgsql.auth_query']
  } catch {
    return DEFAULTS['auth.pgsql.auth_query']
  }
}

const query = (): Joi.StringSchema => Joi.string().trim()
const file = (): Joi.StringSchema => Joi.string().trim().allow('').empty('')

export const schema = Joi.object<AuthPgsqlConfig>({
  'auth.pgsql.server': serverSetting(DEFAULTS['auth.pgsql.server'], 5432),
  'auth.pgsql.username': Joi.string().default(DEFAULTS['auth.pgsql.username']),
  'auth.pgsql.password': Joi.string().allow(''),
  'auth.pgsql.database': Joi.string().trim().default(DEFAULTS['auth.pgsql.database']),
  'auth.pgsql.encoding': Joi.string().trim().pattern(/^[A-Za-z0-9_-]+$/).default(DEFAULTS['auth.pgsql.encoding']),
  'auth.pgsql.ssl': switchSetting(false),
  'auth.pgsql.ssl_opts.keyfile': file(),
  'auth.pgsql.ssl_opts.certfile': file(),
  'auth.pgsql.ssl_opts.cacertfile': file(),
  'auth.pgsql.password_hash': passwordHashSetting(DEFAULTS['auth.pgsql.password_hash']),
  'auth.pgsql.auth_query': query().default(defaultAuthQuery),
  'auth.pgsql.super_query': query().allow('').default(DEFAULTS['auth.pgsql.super_query']),
  'auth.pgsql.acl_query': query().allow('').empty(''),
  ...commonKeys('auth.pgsql')
})
