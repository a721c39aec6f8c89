// The SPEC v3 records (§2.1, §2.3, §2.5, §2.6, §2.14, §2.18) made of the
// node's facts (lib/service/facts.ts): times as `YYYY-MM-DD HH:MM:SS`, a
// value nobody knows as the text `undefined`, the constants EMQ X's records
// carry, fields in EMQ X's order.
import type { Alarm, ConfigFacts, ConnectionFacts, NodeStats, RouteFacts, SessionFacts, SubscriptionFacts } from './facts.js'
import { megabytes, specTime } from './facts.js'

/** SPEC §2.1 */
export interface ConnectionRecord {
  clean_start: boolean
  client_id: string
  connected_at: string
  ipaddress: string
  is_bridge: boolean
  is_super: boolean
  keepalive: number
  mountpoint: string
  node: string
  peercert: string
  port: number
  proto_name: string
  proto_ver: number | string
  username: string
  will_topic: string
  zone: string
}

/** SPEC §2.3 */
export interface SessionRecord {
  awaiting_rel_len: number
  binding: string
  clean_start: boolean
  client_id: string
  created_at: string
  deliver_msg: number
  enqueue_msg: number
  expiry_interval: number
  heap_size: number
  inflight_len: number
  mailbox_len: number
  max_awaiting_rel: number
  max_inflight: number
  max_mqueue: number
  max_subscriptions: number
  mqueue_dropped: number
  mqueue_len: number
  node: string
  reductions: number
  subscriptions_count: number
  username: string
}

/** SPEC §2.5 (v3, with node) */
export type SubscriptionRecord = SubscriptionFacts

/** SPEC §2.6 */
export type RouteRecord = RouteFacts

/** SPEC §2.14, `datatpye` spelt as the spec spells it, plus `kind`: when a change made at run time takes effect */
export interface ConfigRecord { key: string, value: string, datatpye: string, app: string, kind: string }

/** EMQ X 3.x alarm record (research notes) */
export interface AlarmRecord { id: string, desc: Omit<Alarm, 'id'> }

/** SPEC §2: a string field with no value holds `undefined`. */
function text (value: string | undefined): string {
  return value === undefined || value === '' ? 'undefined' : value
}


export function connectionRecord (c: ConnectionFacts): ConnectionRecord {
  return {
    clean_start: c.clean_start,
    client_id: c.client_id,
    connected_at: specTime(c.connected_at),
    ipaddress: c.ipaddress ?? 'undefined',
    is_bridge: false,
    is_super: c.is_super,
    keepalive: c.keepalive,
    mountpoint: text(c.mountpoint),
    node: c.node,
    peercert: c.peercert ?? 'nossl',
    port: c.port ?? 0,
    proto_name: c.proto_name ?? (c.proto_ver === 3 ? 'MQIsdp' : 'MQTT'),
    proto_ver: c.proto_ver,
    username: text(c.username),
    will_topic: text(c.will_topic),
    zone: c.zone ?? 'external'
  }
}

/**
 * The order a connected client's session has always listed its fields in;
 * an offline one (from the store) lists them in SessionRecord's order.
 */
const CONNECTED_ORDER: ReadonlyArray<keyof SessionRecord> = Object.freeze([
  'awaiting_rel_len', 'binding', 'clean_start', 'client_id', 'created_at', 'deliver_msg', 'enqueue_msg', 'expiry_interval', 'heap_size',
  'mailbox_len', 'reductions', 'inflight_len', 'max_awaiting_rel', 'max_inflight', 'max_mqueue', 'max_subscriptions', 'mqueue_dropped',
  'mqueue_len', 'node', 'subscriptions_count', 'username'
])

/** An offline session has no `created_at` (only a live one knows it): `undefined`. */
export function sessionRecord (s: SessionFacts): SessionRecord {
  const record: SessionRecord = {
    awaiting_rel_len: s.awaiting_rel_len,
    binding: 'local',
    clean_start: s.clean_start,
    client_id: s.client_id,
    created_at: s.created_at === undefined ? 'undefined' : specTime(s.created_at),
    deliver_msg: s.deliver_msg,
    enqueue_msg: s.enqueue_msg,
    expiry_interval: s.expiry_interval,
    heap_size: s.heap_size,
    inflight_len: s.inflight_len,
    mailbox_len: s.mailbox_len,
    max_awaiting_rel: s.max_awaiting_rel,
    max_inflight: s.max_inflight,
    max_mqueue: s.max_mqueue,
    max_subscriptions: s.max_subscriptions,
    mqueue_dropped: s.mqueue_dropped,
    mqueue_len: s.mqueue_len,
    node: s.node,
    // an Erlang process figure with no Node.js counterpart (a session is not a process here): 0
    reductions: 0,
    subscriptions_count: s.subscriptions_count,
    username: text(s.username)
  }
  if (s.created_at === undefined) return record
  return Object.fromEntries(CONNECTED_ORDER.map((key) => [key, record[key]])) as unknown as SessionRecord
}

export function configRecord ({ key, value, datatype, app, kind }: ConfigFacts): ConfigRecord {
  return { key, value, datatpye: datatype, app, kind }
}

export function alarmRecord ({ id, ...desc }: Alarm): AlarmRecord {
  return { id, desc }
}

/** The node list's form of a node's figures (§2.8): memory written `<n>M`. */
export function nodeStatsListForm (stats: NodeStats): Omit<NodeStats, 'memory_total' | 'memory_used'> & { memory_total: string, memory_used: string } {
  return { ...stats, memory_total: megabytes(stats.memory_total), memory_used: megabytes(stats.memory_used) }
}
