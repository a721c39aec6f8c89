// Builds the Aedes engine from the node's configuration. Aedes is patched
// (patches/aedes+2.0.0-beta.1+NNN+*.patch, see docs/architecture.md); the options
// marked below exist only with the patch.
import { Aedes, type AedesOptions, type Client } from 'aedes'
import type { Packet } from 'mqtt-packet'
import type { MQEmitter } from 'mqemitter'
import type { Config } from '../config/store.js'
import type { EnhancedAuth } from '../access/enhanced-auth.js'
import type { SessionTimers } from './session-timers.js'
import type { SharedSubscriptions } from './shared-subscriptions.js'
import type { AedesPersistence } from './store.js'

/** Aedes clamps topic levels to 1..100; EMQ X writes 0 for "no limit". */
const MAX_TOPIC_LEVELS = 100

/** Options the Aedes patch adds. */
interface PatchedOptions {
  /** inbound QoS 2 messages awaiting PUBREL per client; 0 = no cap */
  maxInflightInbound: number
  /** outbound QoS 1/2 window per client, with its Receive Maximum; 0 = Receive Maximum only */
  maxInflight: number
  /** outbound messages a clean session may have waiting; 0 = no cap */
  maxQueuedMessages: number
  /** maps a client's UNSUBSCRIBE filter as its SUBSCRIBE filters were (mountpoint) */
  mapUnsubscribe?: (client: Client, topic: string) => string
  /** the most subscriptions a client may hold, applied filter by filter within each SUBSCRIBE; 0 = no limit */
  subscriptionQuota?: (client: Client) => number
  /** every packet parsed from a client */
  packetIn?: PacketObserver
  /** every packet written to a client */
  packetOut?: PacketObserver
  /** a PUBACK, PUBREC, PUBREL or PUBCOMP for a packet id not in flight */
  packetMissed?: PacketObserver
  /** MQTT 5 capabilities advertised in CONNACK and enforced */
  maximumQoS: number
  retainAvailable: boolean
  wildcardSubscriptionAvailable: boolean
  subscriptionIdentifiersAvailable: boolean
  /** handles `$share/` and `$queue/` subscriptions; absent: not available */
  sharedSubscriptions?: SharedSubscriptions
  /** runs MQTT 5 enhanced authentication exchanges */
  enhancedAuth?: EnhancedAuth
  /** records session-expiry and will-delay timers */
  timerStore?: SessionTimers
}

export type PacketObserver = (client: Client, packet: Packet) => void

export type EngineCallbacks = Pick<AedesOptions, 'authenticate' | 'authorizePublish' | 'authorizeSubscribe' | 'authorizeForward'> &
  Pick<PatchedOptions, 'mapUnsubscribe' | 'subscriptionQuota' | 'packetIn' | 'packetOut' | 'packetMissed'>

export interface EngineOptions {
  config: Config
  persistence: AedesPersistence
  /** the message bus shared by a cluster's nodes; undefined: Aedes' in-memory one */
  mq?: MQEmitter
  callbacks: EngineCallbacks
  shared: SharedSubscriptions
  enhanced: EnhancedAuth
  timers: SessionTimers
  id?: string
}

export async function createEngine ({ config, persistence, mq, callbacks, shared, enhanced, timers, id }: EngineOptions): Promise<Aedes> {
  const options: AedesOptions & PatchedOptions = {
    id,
    persistence,
    ...(mq === undefined
      ? {}
      // in a cluster, a node that stops heartbeating is dead after 3 intervals and its clients' wills are published
      : { mq, heartbeatInterval: config.get('cluster.heartbeat_interval') }),
    maxClientsIdLength: config.get('mqtt.max_clientid_len'),
    maximumPacketSize: config.get('mqtt.max_packet_size'),
    maxTopicLevels: config.get('mqtt.max_topic_levels') || MAX_TOPIC_LEVELS,
    sessionExpiryIntervalLimit: Math.floor(config.get('zone.external.session_expiry_interval') / 1000),
    maxInflightInbound: config.get('zone.external.max_awaiting_rel'),
    maxInflight: config.get('zone.external.max_inflight'),
    maxQueuedMessages: config.get('zone.external.max_mqueue_len'),
    topicAliasMaximum: config.get('zone.external.max_topic_alias'),
    // the inbound window the broker enforces is the QoS 2 cap (max_awaiting_rel)
    receiveMaximum: config.get('zone.external.max_awaiting_rel'),
    maximumQoS: config.get('zone.external.max_qos_allowed'),
    retainAvailable: config.get('zone.external.retain_available'),
    wildcardSubscriptionAvailable: config.get('zone.external.wildcard_subscription'),
    subscriptionIdentifiersAvailable: config.get('zone.external.subscription_identifiers'),
    sharedSubscriptions: config.get('zone.external.shared_subscription') ? shared : undefined,
    enhancedAuth: enhanced,
    timerStore: timers,
    ...callbacks
  }
  const engine = await Aedes.createBroker(options)
  // read by the patched SUBSCRIBE handler (Aedes' constructor keeps only the options it knows)
  Object.assign(engine, { subscriptionQuota: callbacks.subscriptionQuota ?? null })
  shared.attach(engine)
  return engine
}
