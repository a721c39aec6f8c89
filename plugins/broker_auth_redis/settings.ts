// The plugin's settings (etc/plugins/broker_auth_redis.conf), with EMQ X
// 3.x emqx_auth_redis defaults, validated and converted by Joi.
import Joi from 'joi'
import { commonKeys, parseServer, passwordHashSetting, type ServerAddress, type UnavailableAcl, type UnavailableAuth } from '../../lib/plugin-kit/index.js'
import { parseCommand, type CommandTemplate } from './command.js'

export type RedisType = 'single' | 'sentinel'

export interface AuthRedisConfig {
  /** single (one server) or sentinel (servers are the sentinels); `auth.redis.sentinel` set implies sentinel */
  'auth.redis.type': RedisType
  /** the server (single) or the sentinels (sentinel) */
  'auth.redis.server': ServerAddress[]
  /** the master's name (sentinel) */
  'auth.redis.sentinel': string
  /** connections opened, used in turn */
  'auth.redis.pool': number
  'auth.redis.database': number
  'auth.redis.password'?: string
  'auth.redis.auth_cmd': CommandTemplate
  'auth.redis.password_hash': string
  /** null: no superuser command */
  'auth.redis.super_cmd': CommandTemplate | null
  /** null: no ACL */
  'auth.redis.acl_cmd': CommandTemplate | null
  /** milliseconds */
  'auth.redis.query_timeout': number
  'auth.redis.unavailable.auth': UnavailableAuth
  'auth.redis.unavailable.acl': UnavailableAcl
}

export const DEFAULTS = {
  'auth.redis.type': 'single',
  'auth.redis.server': '127.0.0.1:6379',
  'auth.redis.pool': 8,
  'auth.redis.database': 0,
  'auth.redis.auth_cmd': 'HMGET mqtt_user:%u password',
  'auth.redis.password_hash': 'plain',
  'auth.redis.super_cmd': 'HGET mqtt_user:%u is_superuser',
  'auth.redis.acl_cmd': 'HGETALL mqtt_acl:%u'
} as const

const REDIS_PORT = 6379
const SENTINEL_PORT = 26379

/** `host:port[, host:port…]` (the port defaults to 6379, or 26379 for sentinels). */
function servers (raw: string, sentinel: boolean): ServerAddress[] {
  const items = raw.split(',').map((s) => s.trim()).filter((s) => s !== '')
  if (items.length === 0) throw new Error('no server given')
  return items.map((item) => parseServer(item, sentinel ? SENTINEL_PORT : REDIS_PORT))
}

const command = (def?: string): Joi.AnySchema => {
  const schema = Joi.any().custom((raw: unknown) => {
    if (typeof raw !== 'string') throw new Error('it is not a command')
    return parseCommand(raw)
  })
  return def === undefined ? schema : schema.default(parseCommand(def))
}

/** An empty value turns the command off (null). */
const optionalCommand = (def: string): Joi.AnySchema => Joi.any().custom((raw: unknown) => {
  if (typeof raw !== 'string') throw new Error('it is not a command')
  return raw.trim() === '' ? null : parseCommand(raw)
}).default(parseCommand(def))

export const schema = Joi.object<AuthRedisConfig>({
  'auth.redis.type': Joi.string().trim().lowercase().valid('single', 'sentinel'),
  'auth.redis.server': Joi.any(),
  'auth.redis.sentinel': Joi.string().trim().allow('').default(''),
  'auth.redis.database': Joi.number().integer().min(0).max(65535).default(DEFAULTS['auth.redis.database']),
  'auth.redis.password': Joi.string().allow('').empty(''),
  'auth.redis.auth_cmd': command(DEFAULTS['auth.redis.auth_cmd']),
  'auth.redis.password_hash': passwordHashSetting(DEFAULTS['auth.redis.password_hash']),
  'auth.redis.super_cmd': optionalCommand(DEFAULTS['auth.redis.super_cmd']),
  'auth.redis.acl_cmd': optionalCommand(DEFAULTS['auth.redis.acl_cmd']),
  ...commonKeys('auth.redis', { pool: DEFAULTS['auth.redis.pool'] })
}).custom((value: Record<string, unknown>) => {
  const named = value['auth.redis.sentinel'] !== ''
  const type = (value['auth.redis.type'] as RedisType | undefined) ?? (named ? 'sentinel' : 'single')
  if (type === 'sentinel' && !named) throw new Error('"auth.redis.sentinel" (the master name) is required with type sentinel')
  const raw = value['auth.redis.server'] ?? DEFAULTS['auth.redis.server']
  if (typeof raw !== 'string') throw new Error('"auth.redis.server" is not host:port')
  const list = servers(raw, type === 'sentinel')
  if (type === 'single' && list.length > 1) throw new Error('"auth.redis.server" names one server (type single)')
  return { ...value, 'auth.redis.type': type, 'auth.redis.server': list }
})
