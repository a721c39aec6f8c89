// The message metrics that are not one packet on the wire (SPEC §2.11):
// - messages/dropped: a message no subscriber received — the router had no
//   connected subscriber and no persistent session queued it — plus each
//   message a session's full queue refused (`messageDropped`, queue_full)
//   and each PUBLISH the ACL denied. The broker's own `$SYS/` messages are
//   not counted (as EMQ X). An inbound QoS 2 message refused because the
//   client has max_awaiting_rel awaiting PUBREL counts as dropped too.
//   messages/qos2/dropped: those of them with QoS 2 (an ACL denial's QoS is
//   not known where it is reported, so it counts in messages/dropped only).
// - messages/expired (qos2/expired): a queued message discarded on delivery
//   because its MQTT 5 Message Expiry Interval had passed. The node has no
//   QoS 2 await-PUBREL timeout, so qos2/expired counts expired QoS 2 messages.
// - messages/retained: a retained message stored (not a clear, not one the
//   retainer plugin's limits refused, not the broker's own `$SYS/` ones; none
//   while no plugin keeps retained messages).
// The per-message costs: two calls in the router (see observeUnrouted), and
// for QoS 1/2 messages with persistent subscribers a WeakSet add. No
// closure or object per message.
import type { Aedes, AedesPublishPacket, Client } from 'aedes'
import type { RetainedMessages } from '../engine/retained.js'
import { enginePersistence, observeUnrouted, onMessageDropped } from '../engine/internals.js'
import { PUBLISH_DENIALS, PublishStop } from '../engine/callbacks.js'
import type { Metrics } from './metrics.js'

const SYS = '$SYS/'
/** The error of an inbound QoS 2 message over max_awaiting_rel (the Aedes patch) */
const AWAITING_REL_FULL = 'too many inbound QoS 2 messages awaiting PUBREL'

interface WatchedPersistence {
  outgoingEnqueueCombi: (subs: unknown[], packet: AedesPublishPacket) => Promise<unknown>
  outgoingClearMessageId: (client: Client, packet: { qos?: number, messageExpiry?: number }) => Promise<unknown>
}

/** Starts counting; returns what stops it. `onRetained` runs when the retained set may have changed. */
export function countMessages (engine: Aedes, retained: RetainedMessages, metrics: Metrics, onRetained: () => void): () => void {
  const queued = new WeakSet<object>()
  const unobserve = observeUnrouted(engine, (packet) => {
    if (!packet.topic.startsWith(SYS) && !queued.has(packet)) metrics.dropped(packet.qos)
  })

  const persistence = enginePersistence<WatchedPersistence>(engine)
  const { outgoingEnqueueCombi, outgoingClearMessageId } = persistence
  // plain functions handing back the inner promise: no extra promise per message
  persistence.outgoingEnqueueCombi = function (subs, packet) {
    if (subs.length > 0) queued.add(packet)
    return outgoingEnqueueCombi.call(persistence, subs, packet)
  }
  persistence.outgoingClearMessageId = function (client, packet) {
    if (packet.messageExpiry !== undefined && packet.messageExpiry <= Date.now()) metrics.expired(packet.qos ?? 0)
    return outgoingClearMessageId.call(persistence, client, packet)
  }
  retained.onChange = (stored) => {
    if (stored) metrics.messagesRetained++
    onRetained()
  }

  const onDropped = (packet: AedesPublishPacket): void => metrics.dropped(packet.qos)
  onMessageDropped(engine, onDropped)
  const onClientError = (client: Client, err: Error): void => {
    if (err.message === AWAITING_REL_FULL) metrics.dropped(2)
    else if (client.connected && (PUBLISH_DENIALS.has(err) || err instanceof PublishStop)) metrics.dropped(0)
  }
  engine.on('clientError', onClientError)

  return () => {
    unobserve()
    Object.assign(persistence, { outgoingEnqueueCombi, outgoingClearMessageId })
    retained.onChange = undefined
    const events = engine as unknown as NodeJS.EventEmitter
    events.off('messageDropped', onDropped)
    events.off('clientError', onClientError)
  }
}
