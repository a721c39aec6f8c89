// The plugin's settings (etc/plugins/broker_auth_mysql.conf), EMQ X 3.x
// emqx_auth_mysql keys and defaults, plus the common database-plugin keys
// (lib/access/backend/settings.ts).
import Joi from 'joi'
import { commonKeys, passwordHashSetting, serverSetting, usesSalt, type ServerAddress, type UnavailableAcl, type UnavailableAuth } from '../../lib/plugin-kit/index.js'

export interface AuthMysqlConfig {
  'auth.mysql.server': ServerAddress
  'auth.mysql.pool': number
  'auth.mysql.username'?: string
  'auth.mysql.password'?: string
  'auth.mysql.database': string
  'auth.mysql.query_timeout': number
  'auth.mysql.auth_query': string
  'auth.mysql.password_hash': string
  /** empty: no superuser query */
  'auth.mysql.super_query': string
  /** empty: no ACL */
  'auth.mysql.acl_query': string
  'auth.mysql.unavailable.auth': UnavailableAuth
  'auth.mysql.unavailable.acl': UnavailableAcl
}

export const DEFAULTS = {
  'auth.mysql.server': '127.0.0.1:3306',
  'auth.mysql.database': 'mqtt',
  'auth.mysql.auth_query': "select password, username from mqtt_user where username = '%u' limit 1",
  'auth.mysql.salted_auth_query': "select password, salt, username from mqtt_user where username = '%u' limit 1",
  'auth.mysql.password_hash': 'sha256',
  'auth.mysql.super_query': "select is_superuser from mqtt_user where username = '%u' limit 1",
  'auth.mysql.acl_query': "select allow, ipaddr, username, clientid, access, topic from mqtt_acl where ipaddr = '%a' or username = '%u' or username = '$all' or clientid = '%c'"
} as const

/** The auth query when none is set: it selects the salt too when the hash needs one. */
function defaultAuthQuery (parent: Record<string, unknown>): string {
  try {
    const hash = String(parent['auth.mysql.password_hash'] ?? DEFAULTS['auth.mysql.password_hash'])
    return usesSalt(hash) ? DEFAULTS['auth.mysql.salted_auth_query'] : DEFAULTS['auth.mysql.auth_query']
  } catch {
    return DEFAULTS['auth.mysql.auth_query'] // the bad hash setting is reported by its own key
  }
}

const query = (): Joi.StringSchema => Joi.string().trim()

export const schema = Joi.object<AuthMysqlConfig>({
  'auth.mysql.server': serverSetting(DEFAULTS['auth.mysql.server'], 3306),
  'auth.mysql.username': Joi.string().allow(''),
  'auth.mysql.password': Joi.string().allow(''),
  'auth.mysql.database': Joi.string().trim().default(DEFAULTS['auth.mysql.database']),
  'auth.mysql.password_hash': passwordHashSetting(DEFAULTS['auth.mysql.password_hash']),
  'auth.mysql.auth_query': query().default(defaultAuthQuery),
  'auth.mysql.super_query': query().allow('').default(DEFAULTS['auth.mysql.super_query']),
  'auth.mysql.acl_query': query().allow('').default(DEFAULTS['auth.mysql.acl_query']),
  ...commonKeys('auth.mysql')
})
