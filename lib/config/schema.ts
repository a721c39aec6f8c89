// Every setting of etc/broker.conf: its type, default, owning application and
// kind (live unless wrapped: `restart` takes effect at the next start, `fixed`
// never changes while the node runs; lib/config/types.ts).
// etc/broker.conf documents each key for users; this table is what the code
// trusts. Keys follow EMQ X 3.x names (SPEC §8, §2.14).
import { listenerSchema, listenerSetting } from './listener-settings.js'
import { bytesize, choice, duration, fixed, flag, integer, restart, string, syntax, type Setting } from './types.js'

const LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'] as const

export const schema = {
  'node.name': fixed(string('broker@127.0.0.1')),
  'node.data_dir': fixed(string('data')),
  'node.drain_rate': integer(100, 1),

  'cluster.name': restart(string('brokercluster')),
  'cluster.discovery': restart(choice(['manual', 'redis'] as const, 'manual')),
  'cluster.redis.server': restart(string('127.0.0.1:6379')),
  'cluster.redis.sentinel': restart(string('')),
  'cluster.redis.sentinels': restart(string('')),
  'cluster.redis.master_name': restart(string('mymaster')),
  'cluster.redis.password': restart(string('')),
  'cluster.redis.database': restart(integer(0, 0, 15)),
  'cluster.heartbeat_interval': restart(duration('2s')),
  'cluster.rpc_timeout': restart(duration('5s')),
  'cluster.cookie': restart(string('brokersecretcookie')),
  'cluster.bus.overflow': restart(choice(['pause', 'drop_qos0'] as const, 'pause')),
  'cluster.bus.window': restart(integer(10000, 100, 10_000_000)),

  'log.console.level': choice(LOG_LEVELS, 'notice'),
  'log.console.format': restart(choice(['auto', 'text', 'json'] as const, 'auto')),
  'log.file': restart(string('')),
  'log.file.level': choice(LOG_LEVELS, 'notice'),
  'log.file.max_size': restart(bytesize('10MB')),
  'log.file.max_count': restart(integer(5, 1, 1000)),

  // the built-in listeners; any other `listener.<type>.<name>` is one more block (listener-settings.ts)
  ...listenerSchema('tcp', 'external', '0.0.0.0:1883'),
  ...listenerSchema('ssl', 'external', '8883'),
  ...listenerSchema('ws', 'external', '8083'),
  ...listenerSchema('wss', 'external', '8084'),

  'mqtt.allow_anonymous': flag(true),
  'mqtt.auth_failure_delay': duration('1s'),
  'mqtt.acl_nomatch': choice(['allow', 'deny'] as const, 'allow'),
  'mqtt.acl_file': string('etc/acl.conf'),
  'mqtt.cache_acl': flag(true),
  'mqtt.acl_cache_max_size': integer(32, 1),
  'mqtt.acl_cache_ttl': duration('1m'),
  'mqtt.session_owner_check': flag(true),
  'mqtt.max_packet_size': bytesize('1MB'),
  'mqtt.max_clientid_len': integer(65535, 23, 65535),
  'mqtt.max_topic_levels': integer(0, 0, 100),

  // SPEC §2.14, §6 name it `mqtt.broker.sys_interval`; `broker.sys_interval` is an alias (ALIASES)
  'mqtt.broker.sys_interval': duration('1m', 'broker', 'integer, duration'),
  'broker.shared_subscription_strategy': choice(['random', 'round_robin', 'sticky', 'hash'] as const, 'random'),

  'zone.external.max_inflight': integer(32, 0, 65535),
  'zone.external.max_awaiting_rel': integer(100, 0, 65535),
  'zone.external.max_mqueue_len': integer(1000, 0),
  'zone.external.session_expiry_interval': duration('2h'),
  'zone.external.max_subscriptions': integer(0, 0),
  'zone.external.mountpoint': string(''),
  'zone.external.max_qos_allowed': integer(2, 0, 2),
  'zone.external.retain_available': flag(true),
  'zone.external.wildcard_subscription': flag(true),
  'zone.external.subscription_identifiers': flag(true),
  'zone.external.shared_subscription': flag(true),
  'zone.external.max_topic_alias': integer(65535, 0, 65535),
  'zone.external.server_keepalive': integer(0, 0, 65535),

  'plugins.etc_dir': restart(string('etc/plugins')),

  // retainer.* are the broker_retainer plugin's (etc/plugins/broker_retainer.conf)

  // --- observability (issue 5) ---
  'os_mon.cpu_check_interval': duration('60s'),
  'os_mon.cpu_high_watermark': percent('80%'),
  'os_mon.cpu_low_watermark': percent('60%'),
  'os_mon.mem_check_interval': duration('60s'),
  'os_mon.sysmem_high_watermark': percent('70%'),
  'os_mon.procmem_high_watermark': percent('5%'),
  'alarm.check_interval': duration('30s'),
  'alarm.fd_high_watermark': percent('90%'),
  'alarm.connections_high_watermark': percent('90%'),
  'sysmon.long_gc': duration('100ms'),
  'sysmon.long_schedule': duration('240ms'),
  'sysmon.large_heap': bytesize('1GB'),
  'sysmon.busy_port': bytesize('0'),
  'sysmon.busy_dist_port': bytesize('1MB')
  // --- end observability (issue 5) ---
} as const

export type Schema = typeof schema
export type SettingKey = keyof Schema
export type SettingValue<K extends SettingKey> = Schema[K] extends Setting<infer T> ? T : never

/** Other names of a setting, accepted wherever a key is (files, env, --set, the API, `Config`); listings use the schema's name. */
export const ALIASES = {
  'broker.sys_interval': 'mqtt.broker.sys_interval'
} as const satisfies Record<string, SettingKey>

export type AliasKey = keyof typeof ALIASES
/** A schema key or an alias of one. */
export type AnyKey = SettingKey | AliasKey
/** The schema key a key or alias names. */
export type Canonical<K extends AnyKey> = K extends AliasKey ? typeof ALIASES[K] : K

/** The schema's name for `key` (an alias resolved; any other text unchanged). */
export function canonicalKey (key: string): string {
  return Object.hasOwn(ALIASES, key) ? ALIASES[key as AliasKey] : key
}

export function isSettingKey (key: string): key is SettingKey {
  return Object.hasOwn(schema, key)
}

/** Settings that moved to a plugin's own file: what an unknown-setting error says of them. */
const MOVED_TO_PLUGINS: ReadonlyArray<readonly [prefix: string, plugin: string]> = [['retainer.', 'broker_retainer'], ['module.', 'broker_modules']]

/** Where a key of an older etc/broker.conf went, e.g. `moved to etc/plugins/broker_retainer.conf`; undefined for any other key. */
export function movedSetting (key: string): string | undefined {
  const plugin = MOVED_TO_PLUGINS.find(([prefix]) => key.startsWith(prefix))?.[1]
  return plugin === undefined ? undefined : `unknown setting: it moved to etc/plugins/${plugin}.conf (the ${plugin} plugin's settings)`
}

/** The setting a key names: a schema key, or a key of a listener of any name; undefined for an unknown key. */
export function settingOf (key: string): Setting<unknown> | undefined {
  return isSettingKey(key) ? schema[key] as Setting<unknown> : listenerSetting(key)
}

// --- observability (issue 5) ---
/** A percentage written `80%` (or `80`, decimals allowed); the value is the number of percent. */
function percent (def: string): Setting<number> {
  return {
    datatype: 'string',
    kind: 'live',
    default: def,
    app: 'broker',
    schema: syntax(parsePercent)
  }
}

function parsePercent (raw: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*%?$/.exec(raw)
  if (!m || Number(m[1]) > 100) throw new Error(`"${raw}" is not a percentage (0%..100%)`)
  return Number(m[1])
}
// --- end observability (issue 5) ---
