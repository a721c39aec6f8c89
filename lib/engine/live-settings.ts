// The engine's limits and capabilities as live settings: each is a field of
// the Aedes broker object that its handlers read per connection or per packet,
// so a change made at run time is written there and applies at once (to new
// connections; the outbound window and packet size limits to open ones too).
import type { Aedes } from 'aedes'
import type { Config } from '../config/store.js'
import type { SettingKey } from '../config/schema.js'
import type { SharedSubscriptions } from './shared-subscriptions.js'

/** Aedes clamps topic levels to 1..100; EMQ X writes 0 for "no limit". */
const MAX_TOPIC_LEVELS = 100

type Fields = (config: Config, shared: SharedSubscriptions) => Record<string, unknown>

const ENGINE_FIELDS: Partial<Record<SettingKey, Fields>> = {
  'mqtt.max_clientid_len': (c) => ({ maxClientsIdLength: c.get('mqtt.max_clientid_len') }),
  'mqtt.max_packet_size': (c) => ({ maximumPacketSize: c.get('mqtt.max_packet_size') }),
  'mqtt.max_topic_levels': (c) => ({ maxTopicLevels: c.get('mqtt.max_topic_levels') || MAX_TOPIC_LEVELS }),
  'zone.external.session_expiry_interval': (c) => ({ sessionExpiryIntervalLimit: Math.floor(c.get('zone.external.session_expiry_interval') / 1000) }),
  // the inbound window the broker enforces (Receive Maximum) is the QoS 2 cap
  'zone.external.max_awaiting_rel': (c) => ({ maxInflightInbound: c.get('zone.external.max_awaiting_rel'), receiveMaximum: c.get('zone.external.max_awaiting_rel') }),
  'zone.external.max_inflight': (c) => ({ maxInflight: c.get('zone.external.max_inflight') }),
  'zone.external.max_mqueue_len': (c) => ({ maxQueuedMessages: c.get('zone.external.max_mqueue_len') }),
  'zone.external.max_topic_alias': (c) => ({ topicAliasMaximum: c.get('zone.external.max_topic_alias') }),
  'zone.external.max_qos_allowed': (c) => ({ maximumQoS: c.get('zone.external.max_qos_allowed') }),
  'zone.external.retain_available': (c) => ({ retainAvailable: c.get('zone.external.retain_available') }),
  'zone.external.wildcard_subscription': (c) => ({ wildcardSubscriptionAvailable: c.get('zone.external.wildcard_subscription') }),
  'zone.external.subscription_identifiers': (c) => ({ subscriptionIdentifiersAvailable: c.get('zone.external.subscription_identifiers') }),
  // the engine reads `null` as "not available" (0x9E)
  'zone.external.shared_subscription': (c, shared) => ({ sharedSubscriptions: c.get('zone.external.shared_subscription') ? shared : null })
}

/** Every engine field the settings give, for the engine's options. */
export function engineSettings (config: Config, shared: SharedSubscriptions): Record<string, unknown> {
  return Object.assign({}, ...Object.values(ENGINE_FIELDS).map((fields) => fields(config, shared)))
}

/** Writes each change of an engine setting into the running engine; returns the undo. */
export function followEngineSettings (engine: Aedes, config: Config, shared: SharedSubscriptions): () => void {
  const onChange = (key: string): void => {
    const fields = ENGINE_FIELDS[key as SettingKey]
    if (fields !== undefined) Object.assign(engine, fields(config, shared))
  }
  config.on('change', onChange)
  return () => { config.off('change', onChange) }
}
