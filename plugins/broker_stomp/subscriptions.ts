// A STOMP connection's subscriptions and the messages its client has yet to
// acknowledge. All of a connection's subscriptions share its one link to the
// engine, where each destination is one MQTT subscription at QoS 1; a
// message the engine sends is matched here against every subscription and
// each match gets its own MESSAGE (its own message-id). The engine's message
// is acknowledged (PUBACK) once every copy is: at once for `ack: auto`, on
// the client's ACK for `client` (cumulative: it acknowledges every earlier
// message of that subscription too) and `client-individual` (that one only).
// A NACK settles the copy as refused (PUBACK 0x80). QoS 0 messages need no
// acknowledgement and are not kept.
import { topicMatches } from '../../lib/plugin-kit/index.js'

export type AckMode = 'auto' | 'client' | 'client-individual'
export const ACK_MODES: readonly string[] = Object.freeze(['auto', 'client', 'client-individual'])

export interface Subscription {
  id: string
  /** the MQTT topic filter, as the client gave it */
  destination: string
  ack: AckMode
  /** the filter that matches topics (a shared subscription's filter without `$share/<group>/` or `$queue/`) */
  matcher: string
  /** message-id → its engine message, in delivery order */
  unacked: Map<string, Delivery>
}

/** One message from the engine, delivered to one or more subscriptions. */
interface Delivery {
  /** copies not yet acknowledged */
  waiting: number
  refused: boolean
  ack: (reasonCode?: number) => void
}

const NACK_CODE = 0x80

/** The filter a shared subscription's messages match. */
function matcherOf (destination: string): string {
  if (destination.startsWith('$queue/')) return destination.slice('$queue/'.length)
  const shared = /^\$share\/[^/]+\/(.+)$/.exec(destination)
  return shared === null ? destination : shared[1]
}

export class Subscriptions {
  readonly #byId = new Map<string, Subscription>()
  /** message-id → the subscription whose copy it is (only those awaiting an ACK) */
  readonly #owner = new Map<string, Subscription>()
  #nextMessageId = 1

  get (id: string): Subscription | undefined {
    return this.#byId.get(id)
  }

  get size (): number {
    return this.#byId.size
  }

  /** Adds a subscription; true when no other one has its destination (the engine must subscribe it). */
  add (id: string, destination: string, ack: AckMode): boolean {
    const first = !this.#uses(destination)
    this.#byId.set(id, { id, destination, ack, matcher: matcherOf(destination), unacked: new Map() })
    return first
  }

  /** Removes a subscription, its awaited copies taken as acknowledged; true when no other one has its destination (the engine must unsubscribe it). */
  remove (id: string): boolean {
    const subscription = this.#byId.get(id)
    if (subscription === undefined) return false
    this.#byId.delete(id)
    for (const [messageId, delivery] of subscription.unacked) {
      this.#owner.delete(messageId)
      settle(delivery, false)
    }
    subscription.unacked.clear()
    return !this.#uses(subscription.destination)
  }

  /**
   * Hands an engine message to every subscription it matches (`send` writes
   * one MESSAGE per match); acknowledges it at once when nothing awaits an
   * ACK. Returns how many copies were sent.
   */
  deliver (topic: string, qos: number, ack: (reasonCode?: number) => void, send: (subscription: Subscription, messageId: string) => void): number {
    const matched: Subscription[] = []
    for (const subscription of this.#byId.values()) if (topicMatches(subscription.matcher, topic)) matched.push(subscription)
    const delivery: Delivery = { waiting: 0, refused: false, ack }
    for (const subscription of matched) {
      const messageId = String(this.#nextMessageId++)
      if (qos > 0 && subscription.ack !== 'auto') {
        delivery.waiting++
        subscription.unacked.set(messageId, delivery)
        this.#owner.set(messageId, subscription)
      }
      send(subscription, messageId)
    }
    if (delivery.waiting === 0) ack()
    return matched.length
  }

  /** The client's ACK (or NACK) of `messageId`; false when no copy awaits it under that id. */
  acknowledge (messageId: string, nack: boolean): boolean {
    const subscription = this.#owner.get(messageId)
    if (subscription === undefined) return false
    if (subscription.ack === 'client-individual') {
      this.#settle(subscription, messageId, nack)
      return true
    }
    // cumulative: every copy of this subscription delivered up to this one
    for (const earlier of [...subscription.unacked.keys()]) {
      this.#settle(subscription, earlier, nack)
      if (earlier === messageId) break
    }
    return true
  }

  #settle (subscription: Subscription, messageId: string, nack: boolean): void {
    const delivery = subscription.unacked.get(messageId)
    if (delivery === undefined) return
    subscription.unacked.delete(messageId)
    this.#owner.delete(messageId)
    settle(delivery, nack)
  }

  #uses (destination: string): boolean {
    for (const subscription of this.#byId.values()) if (subscription.destination === destination) return true
    return false
  }
}

function settle (delivery: Delivery, nack: boolean): void {
  if (nack) delivery.refused = true
  if (--delivery.waiting === 0) delivery.ack(delivery.refused ? NACK_CODE : 0)
}
