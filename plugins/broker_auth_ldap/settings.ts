// The plugin's settings (etc/plugins/broker_auth_ldap.conf), with EMQ X 3.x
// emqx_auth_ldap defaults, validated and converted by Joi.
import Joi from 'joi'
import { commonKeys, durationSetting, parseServer, parseTemplate, poolSetting, switchSetting, type TemplatePart, type UnavailableAuth } from '../../lib/plugin-kit/index.js'

export type Scope = 'base' | 'one' | 'sub'

export interface AuthLdapConfig {
  /** host names (or host:port) */
  'auth.ldap.servers': Array<{ host: string, port: number }>
  'auth.ldap.port': number
  'auth.ldap.pool': number
  'auth.ldap.bind_dn': string
  'auth.ldap.bind_password': string
  /** milliseconds */
  'auth.ldap.timeout': number
  'auth.ldap.auth_dn': TemplatePart[]
  'auth.ldap.scope': Scope
  'auth.ldap.filter': TemplatePart[]
  'auth.ldap.password_attribute': string
  'auth.ldap.password_hash': 'plain' | 'md5' | 'sha' | 'sha256'
  'auth.ldap.ssl': boolean
  'auth.ldap.ssl.cacertfile'?: string
  'auth.ldap.ssl.certfile'?: string
  'auth.ldap.ssl.keyfile'?: string
  'auth.ldap.ssl.verify': boolean
  'auth.ldap.unavailable.auth': UnavailableAuth
}

export const DEFAULTS = {
  'auth.ldap.servers': '127.0.0.1',
  'auth.ldap.port': 389,
  'auth.ldap.pool': 8,
  'auth.ldap.bind_dn': 'cn=root,dc=emqx,dc=io',
  'auth.ldap.bind_password': 'public',
  'auth.ldap.timeout': 30_000,
  'auth.ldap.auth_dn': 'cn=%u,ou=device,dc=emqx,dc=io',
  'auth.ldap.scope': 'base',
  'auth.ldap.filter': '(objectClass=*)',
  'auth.ldap.password_attribute': 'userPassword',
  'auth.ldap.password_hash': 'plain'
} as const

const template = (def: string, check?: (raw: string) => void): Joi.AnySchema => Joi.any().custom((raw: unknown) => {
  if (typeof raw !== 'string' || raw.trim() === '') throw new Error('it is empty')
  check?.(raw.trim())
  return parseTemplate(raw.trim())
}).default(parseTemplate(def))

const file = (): Joi.StringSchema => Joi.string().trim().allow('').empty('')

export const schema = Joi.object<AuthLdapConfig>({
  'auth.ldap.servers': Joi.any(),
  'auth.ldap.port': Joi.number().integer().min(1).max(65535).default(DEFAULTS['auth.ldap.port']),
  'auth.ldap.pool': poolSetting(DEFAULTS['auth.ldap.pool']),
  'auth.ldap.bind_dn': Joi.string().trim().allow('').default(DEFAULTS['auth.ldap.bind_dn']),
  'auth.ldap.bind_password': Joi.string().allow('').default(DEFAULTS['auth.ldap.bind_password']),
  // EMQ X: a bare number of seconds
  'auth.ldap.timeout': durationSetting(DEFAULTS['auth.ldap.timeout']),
  'auth.ldap.auth_dn': template(DEFAULTS['auth.ldap.auth_dn']),
  'auth.ldap.scope': Joi.string().trim().lowercase().valid('base', 'one', 'sub').default(DEFAULTS['auth.ldap.scope']),
  'auth.ldap.filter': template(DEFAULTS['auth.ldap.filter'], (raw) => {
    if (!raw.startsWith('(') || !raw.endsWith(')')) throw new Error('a filter is written in parentheses')
  }),
  'auth.ldap.password_attribute': Joi.string().trim().default(DEFAULTS['auth.ldap.password_attribute']),
  'auth.ldap.password_hash': Joi.string().trim().lowercase().valid('plain', 'md5', 'sha', 'sha256').default(DEFAULTS['auth.ldap.password_hash']),
  'auth.ldap.ssl': switchSetting(false),
  'auth.ldap.ssl.cacertfile': file(),
  'auth.ldap.ssl.certfile': file(),
  'auth.ldap.ssl.keyfile': file(),
  'auth.ldap.ssl.verify': switchSetting(true),
  'auth.ldap.unavailable.auth': commonKeys('auth.ldap')['auth.ldap.unavailable.auth']
}).custom((value: Record<string, unknown>) => {
  const raw = value['auth.ldap.servers'] ?? DEFAULTS['auth.ldap.servers']
  if (typeof raw !== 'string') throw new Error('"auth.ldap.servers" is not a list of hosts')
  const port = value['auth.ldap.port'] as number
  const servers = raw.split(',').map((s) => s.trim()).filter((s) => s !== '').map((s) => parseServer(s, port))
  if (servers.length === 0) throw new Error('"auth.ldap.servers" names no server')
  return { ...value, 'auth.ldap.servers': servers }
})
