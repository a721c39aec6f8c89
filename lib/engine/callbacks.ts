// Aedes' authorization callbacks, mapped onto the node's access control:
// ACL on publish and subscribe, $SYS closed to client publishes, the
// subscription quota (`zone.external.max_subscriptions`, 0 = no limit), and
// mountpoints both ways. A will is authorized as its stored owner; a resumed
// session's subscriptions are authorized again.
import type { AedesOptions, Client, PublishPacket, Subscription } from 'aedes'
import { unsharedFilter, type AccessControl } from '../access/access-control.js'
import { topicMatches } from '../access/acl-match.js'
import { clientState, detachedState, type ClientState } from '../access/client-state.js'
import { mountFilter, unmountFilter, unmountTopic } from '../access/mountpoint.js'
import { willOwner } from '../access/will-owner.js'
import type { EngineClient } from './internals.js'
import type { Config } from '../config/store.js'
import type { HookRegistry } from '../hooks/registry.js'
import { messageInfo } from '../hooks/engine-events.js'
import { foldPublish, foldSubscribe, foldUnsubscribe, isStopped, type Stopped } from '../hooks/folds.js'
import { noteTopicRewrite } from '../hooks/rewritten.js'
import type { PublishMessage, SubscribeFilter } from '../hooks/types.js'

const SYS_PREFIX = '$SYS'
const SYS_RESERVED = new Error('$SYS topics are reserved for the broker')
const NOT_AUTHORIZED = new Error('not authorized')
const NOT_AUTHENTICATED = new Error('client not authenticated')
/** The errors a denied PUBLISH is reported with (metrics count them as dropped). */
export const PUBLISH_DENIALS: ReadonlySet<Error> = new Set([SYS_RESERVED, NOT_AUTHORIZED, NOT_AUTHENTICATED])

/**
 * A `message.publish` handler stopped the message: the engine acknowledges it
 * with `reasonCode` (MQTT 5; Aedes patch 191) and does not route it. Below
 * 0x80 the message was taken in (e.g. a delayed message); from 0x80 it was
 * refused and counts as dropped.
 */
export class PublishStop extends Error {
  constructor (readonly reasonCode: number, reason?: string) {
    super(reason ?? (reasonCode < 0x80 ? 'message taken in by a plugin' : 'message refused by a plugin'))
    this.name = 'PublishStop'
  }
}

export interface CallbackDeps { config: Config, access: AccessControl, hooks: HookRegistry }

type Callbacks = Required<Pick<AedesOptions, 'authorizePublish' | 'authorizeSubscribe' | 'authorizeForward'>> & {
  mapUnsubscribe: (client: Client, topic: string) => string
  authorizeRestored: AuthorizeRestored
  subscriptionQuota: (client: Client) => number
}

/** The Aedes patch's check of each subscription a resumed session brings back (stored mounted). */
export type AuthorizeRestored = (client: Client, sub: Subscription, done: (err: Error | null, allowed: boolean) => void) => void

export function createCallbacks ({ config, access, hooks }: CallbackDeps): Callbacks {
  return {
    authorizePublish (client, packet, done) {
      if (packet.topic.startsWith(SYS_PREFIX)) return done(SYS_RESERVED)
      // a will is published as its owner, connected or not (a will without one has no right)
      const owner = willOwner(packet)
      const state = owner !== undefined ? detachedState(owner) : client === null ? undefined : clientState(client)
      if (state === undefined) return done(NOT_AUTHENTICATED)
      if (!hooks.has('message.publish')) return checkPublish(state, packet, done)
      // the fold (topic rewrite, scripts, delayed messages …) runs before the ACL, which checks the topic it made;
      // the message is one literal (not a spread of messageInfo), and a synchronous fold makes no closure but `authorize`
      const folded = foldPublish(hooks, {
        topic: packet.topic,
        payload: Buffer.isBuffer(packet.payload) ? packet.payload : Buffer.from(packet.payload),
        qos: packet.qos,
        retain: packet.retain,
        properties: packet.properties,
        from: state.info.clientId,
        client: state.info,
        authorize: (topic) => access.check(state, 'publish', topic)
      })
      if (!(folded instanceof Promise)) return afterFold(folded, state, packet, done)
      folded.then((result) => afterFold(result, state, packet, done), () => done(NOT_AUTHORIZED))
    },

    authorizeSubscribe (client, sub, done) {
      const state = clientState(client)
      if (state === undefined) return done(NOT_AUTHENTICATED, null)
      if (!hooks.has('client.subscribe')) return checkSubscribe(state, sub, done)
      const folded = foldSubscribe(hooks, state.info, { topic: sub.topic, qos: sub.qos as 0 | 1 | 2 })
      const go = (result: SubscribeFilter | Stopped): void => {
        if (isStopped(result)) {
          // read by the patched SUBSCRIBE handler for this filter's SUBACK code (Aedes patch 191)
          (sub as Subscription & { deniedCode?: number }).deniedCode = result.stop
          return done(null, null)
        }
        sub.topic = result.topic
        sub.qos = result.qos
        checkSubscribe(state, sub, done)
      }
      if (!(folded instanceof Promise)) return go(folded)
      folded.then(go, () => done(null, null))
    },

    // the resuming client's rights now, which may differ from those the filter was granted with
    authorizeRestored (client, sub, done) {
      const state = clientState(client)
      if (state === undefined) return done(null, false)
      const finish = (allow: boolean): void => {
        if (!allow) (state.withdrawn ??= []).push(sub.topic)
        done(null, allow)
      }
      const filter = unmountFilter(state.info.mountpoint, sub.topic)
      if (filter === undefined) return finish(false)
      const allowed = access.check(state, 'subscribe', filter)
      if (typeof allowed === 'boolean') return finish(allowed)
      allowed.then(finish, () => finish(false))
    },

    authorizeForward (client, packet) {
      // [issue 5] Aedes' own $SYS/<engine id>/… notices (heartbeat, new/clients, …) are internal:
      // clients see only the EMQ X-style $SYS/brokers… topics (SPEC §6)
      if (packet.topic.startsWith('$SYS/') && !packet.topic.startsWith('$SYS/brokers')) return null
      const state = clientState(client)
      if (state === undefined) return packet
      if (state.withdrawn !== undefined && onlyWithdrawnMatch(client as EngineClient, state.withdrawn, packet.topic)) return null
      const forwarded = state.info.mountpoint === '' ? packet : { ...packet, topic: unmountTopic(state.info.mountpoint, packet.topic) }
      if (hooks.has('message.delivered')) hooks.notify('message.delivered', state.info, messageInfo(forwarded))
      return forwarded
    },

    // the engine applies it to each SUBSCRIBE's filters in turn (Aedes patch 140)
    subscriptionQuota: () => config.get('zone.external.max_subscriptions'),

    mapUnsubscribe (client, topic) {
      const state = clientState(client)
      if (state === undefined) return topic
      const filter = hooks.has('client.unsubscribe') ? foldUnsubscribe(hooks, state.info, topic) : topic
      return mountFilter(state.info.mountpoint, filter)
    }
  }

  /** Goes on with what `message.publish` made of the packet: its ACL check, or the stop's refusal. */
  function afterFold (result: PublishMessage | Stopped, state: ClientState, packet: PublishPacket, done: (err?: Error | null) => void): void {
    if (isStopped(result)) return done(new PublishStop(result.stop, result.reason))
    noteTopicRewrite(packet, packet.topic, result.topic)
    packet.topic = result.topic
    packet.payload = result.payload
    packet.retain = result.retain
    if (packet.topic.startsWith(SYS_PREFIX)) return done(SYS_RESERVED)
    checkPublish(state, packet, done)
  }

  function checkPublish (state: ClientState, packet: PublishPacket, done: (err?: Error | null) => void): void {
    const allowed = access.check(state, 'publish', packet.topic)
    if (allowed === true) return accepted(state, packet, done)
    if (allowed === false) return done(NOT_AUTHORIZED)
    allowed.then((allow) => allow ? accepted(state, packet, done) : done(NOT_AUTHORIZED), () => done(NOT_AUTHORIZED))
  }

  /** A message its publisher may publish: `message.accepted` sees it as published, then it goes on under the mountpoint. */
  function accepted (state: ClientState, packet: PublishPacket, done: (err?: Error | null) => void): void {
    if (hooks.has('message.accepted')) hooks.notify('message.accepted', messageInfo(packet, state.info.clientId), state.info)
    packet.topic = mountFilter(state.info.mountpoint, packet.topic)
    done(null)
  }

  function checkSubscribe (state: ClientState, sub: Subscription, done: (err: Error | null, sub: Subscription | null) => void): void {
    const allowed = access.check(state, 'subscribe', sub.topic)
    const finish = (allow: boolean): void => {
      if (allow) sub.topic = mountFilter(state.info.mountpoint, sub.topic)
      done(null, allow ? sub : null)
    }
    if (typeof allowed === 'boolean') return finish(allowed)
    allowed.then(finish, () => done(null, null))
  }
}

/** A message queued for a subscription the resumed session lost, and for none it kept. */
function onlyWithdrawnMatch (client: EngineClient, withdrawn: string[], topic: string): boolean {
  const matches = (filter: string): boolean => topicMatches(unsharedFilter(filter), topic)
  return withdrawn.some(matches) && !Object.keys(client.subscriptions).some(matches)
}
