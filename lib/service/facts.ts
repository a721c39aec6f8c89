// What the node's operations answer: plain data that travels over the
// cluster RPC as JSON. Fields carry SPEC's names (so a fact and the record
// made of it line up), but no presentation: times are milliseconds since the
// epoch, a value nobody knows is absent (not the text `undefined`), constants
// of a record are left to its presenter (plugins/broker_management/presenters/).
import type { Alarm } from '../sys/alarms.js'

/** A connected client (SPEC §2.1's record is made of it). */
export interface ConnectionFacts {
  node: string
  client_id: string
  username?: string
  clean_start: boolean
  /** ms since the epoch */
  connected_at: number
  ipaddress?: string
  port?: number
  is_super: boolean
  keepalive: number
  mountpoint?: string
  /** the TLS client certificate's subject; absent without TLS */
  peercert?: string
  /** a gateway client's protocol (`STOMP`, `MQTT-SN`, `CoAP`, `LwM2M`); absent for MQTT, named by its level */
  proto_name?: string
  /** the MQTT protocol level (3, 4, 5), or a gateway client's protocol version (`1.2`) */
  proto_ver: number | string
  will_topic?: string
  zone?: string
}

/** A session, its client connected or not (SPEC §2.3). */
export interface SessionFacts {
  node: string
  client_id: string
  username?: string
  clean_start: boolean
  /** ms since the epoch; absent for an offline session (only a live one knows it) */
  created_at?: number
  /** seconds */
  expiry_interval: number
  /** bytes, an estimate */
  heap_size: number
  awaiting_rel_len: number
  inflight_len: number
  mailbox_len: number
  mqueue_len: number
  mqueue_dropped: number
  deliver_msg: number
  enqueue_msg: number
  subscriptions_count: number
  max_awaiting_rel: number
  max_inflight: number
  max_mqueue: number
  max_subscriptions: number
}

/**
 * What a connected client holds and has moved (broker_recon's top clients, EMQ X's
 * `recon:proc_count` / `recon:inet_count`): `mqueue_len`, `inflight_len`,
 * `awaiting_rel_len` and `heap_size` as in its session (§2.3); `buffered` the
 * message bytes it holds (outbound window, socket buffers); `recv_oct` /
 * `send_oct` the bytes its connection read and wrote.
 */
export interface ClientLoadFacts {
  client_id: string
  mqueue_len: number
  inflight_len: number
  awaiting_rel_len: number
  /** bytes, an estimate (as the session's) */
  heap_size: number
  /** bytes */
  buffered: number
  /** bytes */
  recv_oct: number
  /** bytes */
  send_oct: number
}

/** SPEC §2.5 */
export interface SubscriptionFacts { node: string, client_id: string, topic: string, qos: number }

/** SPEC §2.6 */
export interface RouteFacts { topic: string, node: string }

/**
 * A listener (SPEC §2.10), as the node's MQTT listeners and the plugins' HTTP
 * ones report it; `shutdown_count` is `[]` until a connection was refused or kicked.
 */
export interface ListenerRecord {
  protocol: string
  listen_on: string
  acceptors: number
  max_conns: number
  current_conns: number
  shutdown_count: [] | { closed: number, kicked: number }
}

/** A setting (SPEC §2.14) and when a change to it takes effect (`kind`: live, restart, fixed). */
export interface ConfigFacts { key: string, value: string, datatype: string, app: string, kind: string }

/** A request for a plugin's route (`ctx.routes.add`), as the management API received it: path under /api/v3. */
export interface PluginRouteCall {
  method: string
  path: string
  query: Record<string, string>
  payload?: unknown
}

/** A plugin route's answer: the body of its 200, or its refusal (a SPEC §7 code and the HTTP status). */
export type PluginRouteAnswer = { body: unknown } | { refused: { status: number, code: number | undefined, message: string } }

/** A plugin's setting (SPEC §2.15). */
/** §2.15, and (v3) the key's type from the plugin's schema when the schema names the key: `datatype`, an enum's `values` */
export interface PluginSetting { key: string, value: string, desc: string, required: boolean, datatype?: string, values?: string[] }

export type { Alarm }
