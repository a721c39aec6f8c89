// The MQTT listeners as data: `listener.<type>.<name> = <address>` opens a
// listener of that type, `listener.<type>.<name>.<key>` sets one of its keys.
// Any name is allowed (EMQ X's `external`, `internal`, …); each type takes its
// own key set, so a key unknown for the type is refused like any unknown
// setting. The `external` listener of each type is built in (schema.ts); any
// other exists once a line names it, its address `off` until set.
import { choice, duration, flag, integer, listenAddress, rate, restart, string, type Setting } from './types.js'

export const LISTENER_TYPES = ['tcp', 'ssl', 'ws', 'wss'] as const
export type ListenerType = typeof LISTENER_TYPES[number]

const VERIFY = ['verify_none', 'verify_peer'] as const

/** the listen address, the `listener.<type>.<name>` key itself: `off` unless set (built-in listeners: their default) */
const address = restart(listenAddress('off'))
/** the zone a connection belongs to (its `zone` field); the `zone.external.*` settings apply to every zone for now */
const zone = restart(string('external'))

const tls = {
  keyfile: restart(string('etc/certs/key.pem')),
  certfile: restart(string('etc/certs/cert.pem')),
  cacertfile: restart(string('etc/certs/cacert.pem')),
  verify: restart(choice(VERIFY, 'verify_none')),
  fail_if_no_peer_cert: restart(flag(false))
}

const proxyProtocol = {
  proxy_protocol: restart(flag(false)),
  proxy_protocol_timeout: restart(duration('3s'))
}

const webSocket = {
  acceptors: restart(integer(4, 1)),
  max_clients: integer(64, 1),
  max_conn_rate: rate(1000),
  mqtt_path: restart(string('/mqtt'))
}

const forwardedHeaders = {
  proxy_address_header: restart(string('')),
  proxy_port_header: restart(string(''))
}

/** Each type's keys under `listener.<type>.<name>` (`''`: the address itself) with their kinds and defaults. */
export const LISTENER_KEYS = {
  tcp: { '': address, acceptors: restart(integer(8, 1)), max_connections: integer(1024000, 1), max_conn_rate: rate(1000), ...proxyProtocol, zone },
  ssl: { '': address, acceptors: restart(integer(16, 1)), max_connections: integer(102400, 1), max_conn_rate: rate(500), ...tls, ...proxyProtocol, zone },
  ws: { '': address, ...webSocket, ...forwardedHeaders, zone },
  wss: { '': address, ...webSocket, ...tls, ...forwardedHeaders, zone }
} as const

type Keys<T extends ListenerType> = typeof LISTENER_KEYS[T]
type Value<S> = S extends Setting<infer V> ? V : never

/** The schema entries of listener `<type>.<name>`, keyed by their full setting names. */
export type ListenerSchema<T extends ListenerType, N extends string> = {
  [K in keyof Keys<T> & string as K extends '' ? `listener.${T}.${N}` : `listener.${T}.${N}.${K}`]: Keys<T>[K]
}

/** The typed values of one listener's keys; `address` is the `listener.<type>.<name>` key (null: off). */
export type ListenerValues<T extends ListenerType> = { [K in keyof Keys<T> & string as K extends '' ? 'address' : K]: Value<Keys<T>[K]> }

export function listenerPrefix (type: ListenerType, name: string): string {
  return `listener.${type}.${name}`
}

/** The full setting name of `key` ('': the address) of listener `<type>.<name>`. */
export function listenerKey (type: ListenerType, name: string, key: string): string {
  return key === '' ? listenerPrefix(type, name) : `${listenerPrefix(type, name)}.${key}`
}

/** The schema entries of a listener, its address defaulting to `defaultAddress`. */
export function listenerSchema<T extends ListenerType, const N extends string> (type: T, name: N, defaultAddress = 'off'): ListenerSchema<T, N> {
  const entries = Object.entries(LISTENER_KEYS[type]).map(([key, setting]: [string, Setting<unknown>]) =>
    [listenerKey(type, name, key), key === '' ? { ...setting, default: defaultAddress } : setting])
  return Object.fromEntries(entries) as ListenerSchema<T, N>
}

const LISTENER_PATTERN = /^listener\.(tcp|ssl|ws|wss)\.([A-Za-z0-9_]+)(?:\.([A-Za-z0-9_]+))?$/

export interface ListenerKeyParts { type: ListenerType, name: string, key: string }

/** `listener.tcp.internal.acceptors` → { type: 'tcp', name: 'internal', key: 'acceptors' }; undefined for another key. */
export function listenerKeyParts (key: string): ListenerKeyParts | undefined {
  const m = LISTENER_PATTERN.exec(key)
  return m === null ? undefined : { type: m[1] as ListenerType, name: m[2], key: m[3] ?? '' }
}

/** The setting of a listener key of any name; undefined when the key is no listener key or unknown for its type. */
export function listenerSetting (key: string): Setting<unknown> | undefined {
  const parts = listenerKeyParts(key)
  if (parts === undefined || !Object.hasOwn(LISTENER_KEYS[parts.type], parts.key)) return undefined
  return (LISTENER_KEYS[parts.type] as Record<string, Setting<unknown>>)[parts.key]
}

/** Why a key under a listener is refused: it names the keys its type takes. */
export function unknownListenerKey (key: string): string | undefined {
  const parts = listenerKeyParts(key)
  if (parts === undefined) return undefined
  const known = Object.keys(LISTENER_KEYS[parts.type]).filter((k) => k !== '')
  return `unknown setting for a ${parts.type} listener (it takes ${known.join(', ')})`
}

/** Reads one listener's values through `value(key)` (the configuration's typed value of a full key). */
export function listenerValues<T extends ListenerType> (type: T, name: string, value: (key: string) => unknown): ListenerValues<T> {
  return Object.fromEntries(Object.keys(LISTENER_KEYS[type]).map((key) => [key === '' ? 'address' : key, value(listenerKey(type, name, key))])) as ListenerValues<T>
}
