// The hook handlers: each one checks its rules' topic test, counts the event
// and queues it with its JSON body (EMQ X's fields, per event), or, for a
// message.publish, its fields (the delivery thread writes the body). A
// handler never waits and never changes what it sees: the folds
// (client.subscribe, client.unsubscribe) answer undefined, "go on unchanged".
// The rules' message.publish is the hook `message.accepted`: as in EMQ X, a
// message its publisher may publish, after the folds that may change it.
import type { ClientInfo, ConnectInfo, HookHandlers, HookName, MessageInfo } from '../../lib/plugin-kit/index.js'
import { encodePayload, type PayloadEncoding } from './payload.js'
import type { Pending } from './delivery.js'
import type { EventName, TopicTest } from './rules.js'

/** What an event's client is known by in a body. */
interface Who { clientId: string, username?: string }

export interface EventSink {
  /** the node's name, in every body */
  node: string
  encoding: PayloadEncoding
  offer: (item: Pending) => void
  /** a message.publish by its fields, `size` bytes while it waits (the delivery thread writes its body), or dropped when the queue is full; `publisher`: its client's connection, when a client published it */
  publish: (size: number, message: MessageInfo, username: string | null, publisher?: ClientInfo) => void
  /** false when the queue is full: the event is dropped before anything is made for it */
  room: () => boolean
  /** counts an event dropped for want of room */
  drop: () => void
  /** counts one event of this kind (EMQ X's `webhook.<event>` metric) */
  count: (event: EventName) => void
  /** the connection's keepalive (s) and connect time (ms), when the client is connected here */
  connection: (clientId: string) => { keepalive: number, connected_at: number } | undefined
  /** the user name of a client connected here (a message's publisher) */
  username: (clientId: string) => string | undefined
}

/** A handler on the hook of each event a rule names (the folds answer undefined: unchanged). */
export type EventHandlers = { [H in HookName]?: HookHandlers[H] }

/** The hook of an event: its own but for message.publish, whose handler is the message.accepted notification. */
type HookOf<E extends EventName> = E extends 'message.publish' ? 'message.accepted' : E

/** Bytes an event holds beside its strings and payload (the closure, the body's constant part). */
const OVERHEAD = 256

const name = (username: string | undefined): string | null => username ?? null
const sizeOf = (who: Who, topic = '', payload?: Buffer): number => OVERHEAD + who.clientId.length + (who.username?.length ?? 0) + topic.length + (payload?.length ?? 0)
const isSys = (topic: string): boolean => topic.startsWith('$SYS/')

/** The handlers of the events the rules name. */
export function eventHandlers (sink: EventSink, events: ReadonlyMap<EventName, TopicTest>): EventHandlers {
  const { node, encoding } = sink
  const handlers: EventHandlers = {}
  const full = (event: EventName): boolean => {
    if (sink.room()) return false
    sink.count(event)
    sink.drop()
    return true
  }
  const post = (event: EventName, item: Pending): undefined => {
    sink.count(event)
    sink.offer(item)
    return undefined
  }
  const queue = (event: EventName, key: string, size: number, body: () => object): undefined => post(event, { key, size, body: () => JSON.stringify(body()) })
  const client = (who: Who): { clientid: string, username: string | null } => ({ clientid: who.clientId, username: name(who.username) })
  // a message's fields in a body (written while the hook runs: the message as the hook saw it)
  const message = (m: MessageInfo): object => {
    const { from, topic, qos, retain, payload } = m
    return {
      from_client_id: from ?? null,
      from_username: name(from === undefined ? undefined : sink.username(from)),
      topic,
      qos,
      retain,
      payload: encodePayload(payload, encoding),
      ts: Date.now()
    }
  }
  const connecting = (c: ConnectInfo): object => ({ ...client(c), ipaddress: c.ipAddress, keepalive: c.keepalive, proto_ver: c.protoVer })
  const add = <E extends EventName>(event: E, handler: HookHandlers[HookOf<E>]): void => {
    if (!events.has(event)) return
    const hook = (event === 'message.publish' ? 'message.accepted' : event) as HookOf<E>
    ;(handlers as Record<string, unknown>)[hook] = handler
  }
  const test = (event: EventName): TopicTest => events.get(event) ?? (() => false)

  add('client.connect', (c) => queue('client.connect', c.clientId, sizeOf(c), () =>
    ({ action: 'client_connect', node, ...connecting(c) })))

  add('client.connack', (c, result) => queue('client.connack', c.clientId, sizeOf(c), () =>
    ({ action: 'client_connack', node, ...connecting(c), conn_ack: result })))

  add('client.connected', (c) => {
    const connection = sink.connection(c.clientId)
    const connectedAt = connection?.connected_at ?? Date.now()
    return queue('client.connected', c.clientId, sizeOf(c), () => ({
      action: 'client_connected', node, ...client(c), ipaddress: c.ipAddress, keepalive: connection?.keepalive ?? 0, proto_ver: c.protoVer, connected_at: connectedAt
    }))
  })

  add('client.disconnected', (c, reason) => {
    const at = Date.now()
    return queue('client.disconnected', c.clientId, sizeOf(c), () =>
      ({ action: 'client_disconnected', node, ...client(c), reason, disconnected_at: at }))
  })

  // a filter subscribed or unsubscribed: posted when the rules' filter matches it
  const subscription = (event: EventName, c: ClientInfo, topic: string, opts?: object): undefined => {
    if (!test(event)(topic)) return undefined
    return queue(event, c.clientId, sizeOf(c, topic), () =>
      ({ action: event.replace('.', '_'), node, ...client(c), topic, ...(opts === undefined ? {} : { opts }) }))
  }
  add('client.subscribe', (c, { topic, qos }) => subscription('client.subscribe', c, topic, { qos }))
  add('client.unsubscribe', (c, topic) => subscription('client.unsubscribe', c, topic, {}))
  add('session.subscribed', (c, topic, qos) => subscription('session.subscribed', c, topic, { qos }))
  add('session.unsubscribed', (c, topic) => subscription('session.unsubscribed', c, topic))

  add('session.terminated', (c, reason) => queue('session.terminated', c.clientId, sizeOf(c), () =>
    ({ action: 'session_terminated', node, ...client(c), reason })))

  const publishTest = test('message.publish')
  // the hot path (every message): its fields only, the delivery thread writes the body
  add('message.publish', (m: MessageInfo, publisher?: ClientInfo) => {
    const { from, topic } = m
    if (isSys(topic) || !publishTest(topic)) return
    sink.count('message.publish')
    // the queue's room is checked once, by the sink, which drops (counted) when it is full
    const username = name(publisher !== undefined || from === undefined ? publisher?.username : sink.username(from))
    sink.publish(sizeOf({ clientId: from ?? '' }, topic, m.payload), m, username, publisher)
  })

  const delivered = (event: 'message.delivered' | 'message.acked', action: string): void => {
    const topicTest = test(event)
    add(event, (c: ClientInfo, m: MessageInfo) => {
      if (isSys(m.topic) || !topicTest(m.topic) || full(event)) return undefined
      return queue(event, c.clientId, sizeOf(c, m.topic, m.payload), () =>
        ({ action, node, ...client(c), ...message(m) }))
    })
  }
  delivered('message.delivered', 'message_delivered')
  delivered('message.acked', 'message_acked')

  const droppedTest = test('message.dropped')
  add('message.dropped', (m, reason, c) => {
    if (isSys(m.topic) || !droppedTest(m.topic) || full('message.dropped')) return undefined
    const key = c?.clientId ?? m.from ?? ''
    return queue('message.dropped', key, sizeOf({ clientId: key }, m.topic, m.payload), () =>
      ({ action: 'message_dropped', node, ...(c === undefined ? {} : client(c)), ...message(m), reason }))
  })

  return handlers
}
