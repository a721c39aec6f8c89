// Aedes' authorization callbacks, mapped onto the node's access control:
// ACL on publish and subscribe, $SYS closed to client publishes, the
// subscription quota (`zone.external.max_subscriptions`, 0 = no limit), and
// mountpoints both ways.
import type { AedesOptions, Client } from 'aedes'
import type { AccessControl } from '../access/access-control.js'
import { clientState } from '../access/client-state.js'
import { mountFilter, unmountTopic } from '../access/mountpoint.js'
import type { Config } from '../config/store.js'
import type { HookRegistry } from '../hooks/registry.js'
import { messageInfo } from '../hooks/engine-events.js'

const SYS_PREFIX = '$SYS'
const SYS_RESERVED = new Error('$SYS topics are reserved for the broker')
const NOT_AUTHORIZED = new Error('not authorized')
const NOT_AUTHENTICATED = new Error('client not authenticated')
/** The errors a denied PUBLISH is reported with (metrics count them as dropped). */
export const PUBLISH_DENIALS: ReadonlySet<Error> = new Set([SYS_RESERVED, NOT_AUTHORIZED, NOT_AUTHENTICATED])

export interface CallbackDeps { config: Config, access: AccessControl, hooks: HookRegistry }

type Callbacks = Required<Pick<AedesOptions, 'authorizePublish' | 'authorizeSubscribe' | 'authorizeForward'>> & {
  mapUnsubscribe: (client: Client, topic: string) => string
  subscriptionQuota: (client: Client) => number
}

export function createCallbacks ({ config, access, hooks }: CallbackDeps): Callbacks {
  return {
    authorizePublish (client, packet, done) {
      if (client === null) return done(null)
      if (packet.topic.startsWith(SYS_PREFIX)) return done(SYS_RESERVED)
      const state = clientState(client)
      if (state === undefined) return done(NOT_AUTHENTICATED)
      const allowed = access.check(state, 'publish', packet.topic)
      if (allowed === true) {
        packet.topic = mountFilter(state.info.mountpoint, packet.topic)
        return done(null)
      }
      if (allowed === false) return done(NOT_AUTHORIZED)
      allowed.then((allow) => {
        if (allow) packet.topic = mountFilter(state.info.mountpoint, packet.topic)
        done(allow ? null : NOT_AUTHORIZED)
      }, () => done(NOT_AUTHORIZED))
    },

    authorizeSubscribe (client, sub, done) {
      const state = clientState(client)
      if (state === undefined) return done(NOT_AUTHENTICATED, null)
      const allowed = access.check(state, 'subscribe', sub.topic)
      const finish = (allow: boolean): void => {
        if (allow) sub.topic = mountFilter(state.info.mountpoint, sub.topic)
        done(null, allow ? sub : null)
      }
      if (typeof allowed === 'boolean') return finish(allowed)
      allowed.then(finish, () => done(null, null))
    },

    authorizeForward (client, packet) {
      // [issue 5] Aedes' own $SYS/<engine id>/… notices (heartbeat, new/clients, …) are internal:
      // clients see only the EMQ X-style $SYS/brokers… topics (SPEC §6)
      if (packet.topic.startsWith('$SYS/') && !packet.topic.startsWith('$SYS/brokers')) return null
      const state = clientState(client)
      if (state === undefined) return packet
      const forwarded = state.info.mountpoint === '' ? packet : { ...packet, topic: unmountTopic(state.info.mountpoint, packet.topic) }
      if (hooks.has('message.delivered')) hooks.notify('message.delivered', state.info, messageInfo(forwarded))
      return forwarded
    },

    // the engine applies it to each SUBSCRIBE's filters in turn (Aedes patch 040)
    subscriptionQuota: () => config.get('zone.external.max_subscriptions'),

    mapUnsubscribe (client, topic) {
      const state = clientState(client)
      return state === undefined ? topic : mountFilter(state.info.mountpoint, topic)
    }
  }
}
