// The v3 records the pages show (SPEC §2; plugins/broker_management/presenters/records-v3.ts).

export interface NodeRecord {
  node: string
  name?: string
  node_status: string
  uptime: string
  version: string
  otp_release: string
  memory_total: string
  memory_used: string
  load1: string
  load5: string
  load15: string
  connections: number
  max_fds: number
  process_used: number
  process_available: number
  error?: string
  message?: string
}

export interface ConnectionRecord {
  client_id: string
  username: string
  ipaddress: string
  port: number
  node: string
  connected_at: string
  clean_start: boolean
  keepalive: number
  proto_name: string
  proto_ver: number | string
  is_super: boolean
  zone: string
  peercert: string
  will_topic: string
  mountpoint: string
  error?: string
  message?: string
}

export interface SessionRecord {
  client_id: string
  node: string
  username: string
  clean_start: boolean
  created_at: string
  expiry_interval: number
  subscriptions_count: number
  inflight_len: number
  max_inflight: number
  mqueue_len: number
  max_mqueue: number
  mqueue_dropped: number
  awaiting_rel_len: number
  mailbox_len: number
  deliver_msg: number
  enqueue_msg: number
  heap_size: number
}

export interface SubscriptionRecord { node: string, client_id: string, topic: string, qos: number, error?: string, message?: string }
export interface RouteRecord { topic: string, node: string, error?: string, message?: string }

export interface PluginRecord { name: string, version: string, description: string, active: boolean }

/** GET plugin_configs: `datatype` (and an enum's `values`) from the plugin's schema, when it names the key */
export interface PluginSetting { key: string, value: string, desc: string, required: boolean, datatype?: string, values?: string[] }

export interface ListenerRecord {
  protocol: string
  listen_on: string
  acceptors: number
  max_conns: number
  current_conns: number
  shutdown_count: [] | { closed: number, kicked: number }
}

export interface AlarmRecord {
  id: string
  desc: { severity: string, title: string, summary: string, timestamp: string, clear_at?: string }
}

export interface BannedRecord { who: string, as: string, reason: string, desc: string, until: number, by: string }

export interface AppRecord { app_id: string, name: string, desc: string, status: boolean, expired: string | number, role: string }

export interface UserRecord { username: string, tags: string }

export interface ConfigRecord { key: string, value: string, datatpye: string, app: string, kind: string }

export interface Sample { ts: number, received_per_s: number, sent_per_s: number, connections: number, subscriptions: number }
export interface Samples { interval_s: number, samples: Sample[] }
