// Builds the Aedes engine from the node's configuration. Aedes is patched
// (patches/aedes+2.0.0-beta.1.patch, see docs/architecture.md) for three
// security fixes the beta lacks; the options here switch them on.
import { Aedes, type AedesOptions, type AuthenticateError, type Client, type Subscription } from 'aedes'
import type { Config } from '../config/store.js'
import type { EngineClient } from './internals.js'
import type { AedesPersistence } from './store.js'

/** Aedes clamps topic levels to 1..100; EMQ X writes 0 for "no limit". */
const MAX_TOPIC_LEVELS = 100

/** Options the Aedes patch adds (patches/aedes+2.0.0-beta.1.patch). */
interface PatchedOptions {
  /** inbound QoS 2 messages awaiting PUBREL per client; 0 = no cap */
  maxInflightInbound: number
  /** outbound QoS 1/2 window per client, with its Receive Maximum; 0 = Receive Maximum only */
  maxInflight: number
  /** outbound messages a clean session may have waiting; 0 = no cap */
  maxQueuedMessages: number
}

export interface EngineOptions {
  config: Config
  persistence: AedesPersistence
  id?: string
}

export async function createEngine ({ config, persistence, id }: EngineOptions): Promise<Aedes> {
  const options: AedesOptions & PatchedOptions = {
    id,
    persistence,
    maxClientsIdLength: config.get('mqtt.max_clientid_len'),
    maximumPacketSize: config.get('mqtt.max_packet_size'),
    maxTopicLevels: config.get('mqtt.max_topic_levels') || MAX_TOPIC_LEVELS,
    sessionExpiryIntervalLimit: Math.floor(config.get('zone.external.session_expiry_interval') / 1000),
    maxInflightInbound: config.get('zone.external.max_awaiting_rel'),
    maxInflight: config.get('zone.external.max_inflight'),
    maxQueuedMessages: config.get('zone.external.max_mqueue_len'),
    authenticate: (client, username, _password, done) => {
      if (client.id.length > config.get('mqtt.max_clientid_len')) {
        return done(authError('client id too long', 2), false)
      }
      if (username === undefined && !config.get('mqtt.allow_anonymous')) {
        return done(authError('anonymous access is not allowed', 5), false)
      }
      done(null, true)
    },
    authorizeSubscribe: (client, sub, done) => {
      done(null, withinSubscriptionQuota(client, sub, config.get('zone.external.max_subscriptions')) ? sub : null)
    }
  }
  return await Aedes.createBroker(options)
}

function authError (message: string, returnCode: number): AuthenticateError {
  return Object.assign(new Error(message), { returnCode }) as AuthenticateError
}

/** `zone.external.max_subscriptions`: 0 = unlimited; resubscribing to a filter the client has does not count. */
function withinSubscriptionQuota (client: Client, sub: Subscription, max: number): boolean {
  if (max === 0) return true
  const subscriptions = (client as EngineClient).subscriptions
  return sub.topic in subscriptions || Object.keys(subscriptions).length < max
}
