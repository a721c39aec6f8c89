// The hook handlers: each one checks its rules' topic test, counts the event
// and queues it with what its body needs; the JSON body (EMQ X's fields, per
// event) is written later, when the event is sent. A handler never waits and
// never changes what it sees: the folds (message.publish, client.subscribe,
// client.unsubscribe) answer undefined, "go on unchanged".
import type { ClientInfo, MessageInfo } from '../../lib/plugin-kit/index.js'
import { encodePayload, type PayloadEncoding } from './payload.js'
import type { Pending } from './queue.js'
import type { EventName, TopicTest } from './rules.js'

/** What an event's client is known by in a body. */
interface Who { clientId: string, username?: string }
/** A client at CONNECT / CONNACK time. */
interface Connecting extends Who { ipAddress: string, keepalive: number, protoVer: number }
/** A message as a message hook sees it, with its publisher's user name when the hook knows it. */
type Message = MessageInfo & { client?: Pick<ClientInfo, 'username'> }

export interface EventSink {
  /** the node's name, in every body */
  node: string
  encoding: PayloadEncoding
  offer: (item: Pending) => void
  /** counts one event of this kind (EMQ X's `webhook.<event>` metric) */
  count: (event: EventName) => void
  /** the connection's keepalive (s) and connect time (ms), when the client is connected here */
  connection: (clientId: string) => { keepalive: number, connected_at: number } | undefined
}

/** Bytes an event holds beside its strings and payload (the closure, the body's constant part). */
const OVERHEAD = 256

const name = (username: string | undefined): string | null => username ?? null
const sizeOf = (who: Who, topic = '', payload?: Buffer): number => OVERHEAD + who.clientId.length + (who.username?.length ?? 0) + topic.length + (payload?.length ?? 0)
const isSys = (topic: string): boolean => topic.startsWith('$SYS/')

/** The handlers of the events the rules name, keyed by hook point. */
export function eventHandlers (sink: EventSink, events: ReadonlyMap<EventName, TopicTest>): Map<EventName, (...args: never[]) => undefined> {
  const { node, encoding } = sink
  const handlers = new Map<EventName, (...args: never[]) => undefined>()
  const queue = (event: EventName, key: string, size: number, body: () => object): undefined => {
    sink.count(event)
    sink.offer({ key, size, body: () => JSON.stringify(body()) })
    return undefined
  }
  const client = (who: Who): { clientid: string, username: string | null } => ({ clientid: who.clientId, username: name(who.username) })
  // the message's fields as the hook saw them (the body is written later), its payload encoded then
  const message = (m: Message): () => object => {
    const { from, topic, qos, retain, payload } = m
    const username = m.client?.username
    const ts = Date.now()
    return () => ({ from_client_id: from ?? null, from_username: name(username), topic, qos, retain, payload: encodePayload(payload, encoding), ts })
  }
  const connecting = (c: Connecting): object => ({ ...client(c), ipaddress: c.ipAddress, keepalive: c.keepalive, proto_ver: c.protoVer })
  const add = <A extends unknown[]>(event: EventName, handler: (...args: A) => undefined): void => {
    if (events.has(event)) handlers.set(event, handler as unknown as (...args: never[]) => undefined)
  }
  const test = (event: EventName): TopicTest => events.get(event) ?? (() => false)

  add('client.connect', (c: Connecting) => queue('client.connect', c.clientId, sizeOf(c), () =>
    ({ action: 'client_connect', node, ...connecting(c) })))

  add('client.connack', (c: Connecting, result: string) => queue('client.connack', c.clientId, sizeOf(c), () =>
    ({ action: 'client_connack', node, ...connecting(c), conn_ack: result })))

  add('client.connected', (c: ClientInfo) => {
    const connection = sink.connection(c.clientId)
    const connectedAt = connection?.connected_at ?? Date.now()
    return queue('client.connected', c.clientId, sizeOf(c), () => ({
      action: 'client_connected', node, ...client(c), ipaddress: c.ipAddress, keepalive: connection?.keepalive ?? 0, proto_ver: c.protoVer, connected_at: connectedAt
    }))
  })

  add('client.disconnected', (c: ClientInfo, reason: string) => {
    const at = Date.now()
    return queue('client.disconnected', c.clientId, sizeOf(c), () =>
      ({ action: 'client_disconnected', node, ...client(c), reason, disconnected_at: at }))
  })

  const subscribeTest = test('client.subscribe')
  add('client.subscribe', (c: ClientInfo, filter: { topic: string, qos: number }) => {
    if (!subscribeTest(filter.topic)) return undefined
    const { topic, qos } = filter
    return queue('client.subscribe', c.clientId, sizeOf(c, topic), () =>
      ({ action: 'client_subscribe', node, ...client(c), topic, opts: { qos } }))
  })

  const unsubscribeTest = test('client.unsubscribe')
  add('client.unsubscribe', (c: ClientInfo, topic: string) => {
    if (!unsubscribeTest(topic)) return undefined
    return queue('client.unsubscribe', c.clientId, sizeOf(c, topic), () =>
      ({ action: 'client_unsubscribe', node, ...client(c), topic, opts: {} }))
  })

  const subscribedTest = test('session.subscribed')
  add('session.subscribed', (c: ClientInfo, topic: string, qos: number) => {
    if (!subscribedTest(topic)) return undefined
    return queue('session.subscribed', c.clientId, sizeOf(c, topic), () =>
      ({ action: 'session_subscribed', node, ...client(c), topic, opts: { qos } }))
  })

  const unsubscribedTest = test('session.unsubscribed')
  add('session.unsubscribed', (c: ClientInfo, topic: string) => {
    if (!unsubscribedTest(topic)) return undefined
    return queue('session.unsubscribed', c.clientId, sizeOf(c, topic), () =>
      ({ action: 'session_unsubscribed', node, ...client(c), topic }))
  })

  add('session.terminated', (c: ClientInfo, reason: string) => queue('session.terminated', c.clientId, sizeOf(c), () =>
    ({ action: 'session_terminated', node, ...client(c), reason })))

  const publishTest = test('message.publish')
  add('message.publish', (m: Message) => {
    if (isSys(m.topic) || !publishTest(m.topic)) return undefined
    const fields = message(m)
    return queue('message.publish', m.from ?? '', sizeOf({ clientId: m.from ?? '' }, m.topic, m.payload), () =>
      ({ action: 'message_publish', node, ...fields() }))
  })

  const delivered = (event: 'message.delivered' | 'message.acked', action: string): void => {
    const topicTest = test(event)
    add(event, (c: ClientInfo, m: Message) => {
      if (isSys(m.topic) || !topicTest(m.topic)) return undefined
      const fields = message(m)
      return queue(event, c.clientId, sizeOf(c, m.topic, m.payload), () =>
        ({ action, node, ...client(c), ...fields() }))
    })
  }
  delivered('message.delivered', 'message_delivered')
  delivered('message.acked', 'message_acked')

  const droppedTest = test('message.dropped')
  add('message.dropped', (m: Message, reason: string, c?: ClientInfo) => {
    if (isSys(m.topic) || !droppedTest(m.topic)) return undefined
    const fields = message(m)
    const key = c?.clientId ?? m.from ?? ''
    return queue('message.dropped', key, sizeOf({ clientId: key }, m.topic, m.payload), () =>
      ({ action: 'message_dropped', node, ...(c === undefined ? {} : client(c)), ...fields(), reason }))
  })

  return handlers
}
