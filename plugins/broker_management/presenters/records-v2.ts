// The v2 record shapes (SPEC §2.2, §2.4, §2.5, §2.9, §2.10, §6) made from the
// v3 records (records-v3.ts): renames and selections only, no figures of
// their own.
import { parseDuration } from '../../../lib/plugin-kit/admin.js'
import { megabytes, type BrokerInfo, type ListenerRecord, type NodeStats } from './facts.js'
import type { ConfigRecord, ConnectionRecord, SessionRecord, SubscriptionRecord } from './records-v3.js'

/** §2.2 */
export function clientV2 (c: ConnectionRecord): Record<string, unknown> {
  return { client_id: c.client_id, username: c.username, ipaddress: c.ipaddress, port: c.port, clean_sess: c.clean_start, proto_ver: c.proto_ver, keepalive: c.keepalive, connected_at: c.connected_at }
}

/** §2.4 */
export function sessionV2 (s: SessionRecord): Record<string, unknown> {
  return {
    client_id: s.client_id,
    clean_sess: s.clean_start,
    subscriptions: s.subscriptions_count,
    max_inflight: s.max_inflight,
    inflight_len: s.inflight_len,
    mqueue_len: s.mqueue_len,
    mqueue_dropped: s.mqueue_dropped,
    awaiting_rel_len: s.awaiting_rel_len,
    deliver_msg: s.deliver_msg,
    enqueue_msg: s.enqueue_msg,
    created_at: s.created_at
  }
}

/** §2.5: v2 has no `node` */
export function subscriptionV2 ({ client_id: clientId, topic, qos }: SubscriptionRecord): Record<string, unknown> {
  return { client_id: clientId, topic, qos }
}

/** §2.9 node info; `name` only in the list form */
export function nodeInfoV2 (info: BrokerInfo & { node?: string }): Record<string, unknown> {
  const fields = { version: info.version, sysdescr: info.sysdescr, uptime: info.uptime, datetime: info.datetime, otp_release: info.otp_release, node_status: info.node_status }
  return info.node === undefined ? fields : { name: info.node, ...fields }
}

type NodeStatsAnyForm = Omit<NodeStats, 'memory_total' | 'memory_used'> & { memory_total: number | string, memory_used: number | string }

/** §2.9 monitoring: memory always written `<n>M`; `clients` is v3's `connections` */
export function monitoringV2 (s: NodeStatsAnyForm): Record<string, unknown> {
  const size = (value: number | string): string => typeof value === 'number' ? megabytes(value) : value
  return {
    name: s.name,
    otp_release: s.otp_release,
    memory_total: size(s.memory_total),
    memory_used: size(s.memory_used),
    process_available: s.process_available,
    process_used: s.process_used,
    max_fds: s.max_fds,
    clients: s.connections,
    node_status: s.node_status,
    load1: s.load1,
    load5: s.load5,
    load15: s.load15
  }
}

/** §2.10: the two HTTP listeners have other names in v2 */
const PROTOCOL_V2: Record<string, string> = { 'http:management': 'mqtt:api', 'http:dashboard': 'dashboard:http', 'https:dashboard': 'dashboard:https' }

export function listenerV2 (l: ListenerRecord): Record<string, unknown> {
  return { protocol: PROTOCOL_V2[l.protocol] ?? l.protocol, listen: l.listen_on, acceptors: l.acceptors, max_clients: l.max_conns, current_clients: l.current_conns, shutdown_count: l.shutdown_count }
}

/** §6: the v2 listing gives `sys_interval` as an integer number of seconds (`60`, not `1m`) */
export function configV2 (item: ConfigRecord): Omit<ConfigRecord, 'value'> & { value: string | number } {
  return item.key === 'mqtt.broker.sys_interval' ? { ...item, value: Math.round(parseDuration(item.value) / 1000) } : item
}
