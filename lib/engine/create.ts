// Builds the Aedes engine from the node's configuration. Aedes is patched
// (patches/aedes+2.0.0-beta.1+NNN+*.patch, see docs/architecture.md); the options
// marked below exist only with the patch.
import { Aedes, type AedesOptions, type Client } from 'aedes'
import type { Packet } from 'mqtt-packet'
import type { MQEmitter } from 'mqemitter'
import type { Config } from '../config/store.js'
import type { EnhancedAuth } from '../access/enhanced-auth.js'
import type { AuthorizeRestored } from './callbacks.js'
import type { SessionTimers } from './session-timers.js'
import type { SharedSubscriptions } from './shared-subscriptions.js'
import type { AedesPersistence } from './store.js'
import { connectSessionExpiry, imposeServerKeepAlive, noteConnectKeepalive } from './internals.js'
import { engineSettings, followEngineSettings } from './live-settings.js'
import { createPacketValidator, type PacketRefusal } from './packet-validation.js'

/** Options the Aedes patch adds. */
interface PatchedOptions {
  /** false: no $SYS/<id>/new/clients notice per connect (patch 201; default true) */
  announceNewClients?: boolean
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
  /** checks every parsed packet before any handler; a refusal closes the connection with its reason */
  validatePacket: (packet: Packet, client: Client) => PacketRefusal | undefined
  /** authorizes again each subscription a resumed session brings back */
  authorizeRestored?: AuthorizeRestored
}

export type PacketObserver = (client: Client, packet: Packet) => void

export type EngineCallbacks = Pick<AedesOptions, 'authenticate' | 'authorizePublish' | 'authorizeSubscribe' | 'authorizeForward'> &
  Pick<PatchedOptions, 'mapUnsubscribe' | 'authorizeRestored' | 'subscriptionQuota' | 'packetIn' | 'packetOut' | 'packetMissed'>

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
  // the limits and capabilities come from the live settings' table (live-settings.ts)
  const options = {
    id,
    persistence,
    ...(mq === undefined
      // no other node hears the per-connect $SYS/<id>/new/clients notice (engine patch 201)
      ? { announceNewClients: false }
      // in a cluster, a node that stops heartbeating is dead after 3 intervals and its clients' wills are published
      : { mq, heartbeatInterval: config.get('cluster.heartbeat_interval') }),
    ...engineSettings(config, shared),
    enhancedAuth: enhanced,
    timerStore: timers,
    validatePacket: noteConnect(createPacketValidator({ topicAliasMaximum: () => config.get('zone.external.max_topic_alias'), connectSessionExpiry })),
    ...callbacks,
    authenticate: withServerKeepAlive(config, callbacks.authenticate)
  } as AedesOptions & PatchedOptions
  const engine = await Aedes.createBroker(options)
  // read by the patched SUBSCRIBE handler (Aedes' constructor keeps only the options it knows)
  Object.assign(engine, { subscriptionQuota: callbacks.subscriptionQuota ?? null })
  shared.attach(engine)
  engine.once('closed', followEngineSettings(engine, config, shared))
  return engine
}

/** The validator, noting each CONNECT's Keep Alive on the way (the `client.connect` hook reports it before Aedes reads it). */
function noteConnect (validate: PatchedOptions['validatePacket']): PatchedOptions['validatePacket'] {
  return (packet, client) => {
    if (packet.cmd === 'connect') noteConnectKeepalive(client, packet.keepalive ?? 0)
    return validate(packet, client)
  }
}

type Authenticate = NonNullable<AedesOptions['authenticate']>

/**
 * `zone.external.server_keepalive` (EMQ X): when set, an MQTT 5 client is told
 * the keep-alive it must use (CONNACK Server Keep Alive) and held to it; MQTT
 * 3.x clients keep their own. Read at each CONNECT, so a change applies to the
 * next connections.
 */
function withServerKeepAlive (config: Config, authenticate: Authenticate | undefined): Authenticate {
  return (client, username, password, done) => {
    const finish: typeof done = (err, ok) => {
      const seconds = config.get('zone.external.server_keepalive')
      if (err === null && ok && seconds > 0 && client.version === 5) imposeServerKeepAlive(client, seconds)
      done(err, ok)
    }
    if (authenticate === undefined) return finish(null, true)
    authenticate(client, username, password, finish)
  }
}
