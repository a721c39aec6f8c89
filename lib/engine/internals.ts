// The Aedes internals the node reads, typed in one place so that an engine
// upgrade that moves them breaks here (and in the tests), not silently.
import type { Aedes, AedesPublishPacket, Client } from 'aedes'

export interface EngineClient extends Client {
  /** topic filter → subscription (null-prototype map, see the Aedes patch) */
  subscriptions: Record<string, { qos: number }>
}

/** What the engine's client tells of its CONNECT (set by Aedes before the authenticate callback). */
export interface ConnectingClient {
  _will?: { topic: string } | null
  /** Clean Start (MQTT 5) / Clean Session (3.x) */
  _cleanStart: boolean
  /** the session ends with the connection (Session Expiry Interval 0) */
  clean: boolean
}

interface EngineWithClients { clients: Record<string, EngineClient | undefined> }

export function engineClient (engine: Aedes, clientId: string): EngineClient | undefined {
  return (engine as unknown as EngineWithClients).clients[clientId]
}

export function engineClients (engine: Aedes): EngineClient[] {
  return Object.values((engine as unknown as EngineWithClients).clients).filter((c): c is EngineClient => c !== undefined)
}

/** The Session Expiry Interval the client's CONNECT asked for (seconds); undefined before the CONNECT. */
export function connectSessionExpiry (client: Client): number | undefined {
  return (client as unknown as { _connectSessionExpiryInterval?: number })._connectSessionExpiryInterval
}

const connectKeepalives = new WeakMap<Client, number>()

/** Notes the Keep Alive (seconds) of the client's CONNECT, which Aedes reads only after authentication. */
export function noteConnectKeepalive (client: Client, keepalive: number): void {
  connectKeepalives.set(client, keepalive)
}

/** The Keep Alive (seconds) the client's CONNECT asked for; undefined before the CONNECT. */
export function connectKeepalive (client: Client): number | undefined {
  return connectKeepalives.get(client)
}

/**
 * `messageDropped` (added by the Aedes patch): a message was not delivered to
 * a session because its queue was full (`reason` is `queue_full`).
 */
export function onMessageDropped (engine: Aedes, listener: (packet: AedesPublishPacket, client: { id: string }, reason: string) => void): void {
  (engine as unknown as NodeJS.EventEmitter).on('messageDropped', listener)
}

// --- observability (issue 5): what metrics, statistics and the system monitor read ---

/** Offline sessions the engine keeps until they expire (`expiringSessions`: MQTT 5 expiry, 3.x persistent). */
export function engineOfflineSessions (engine: Aedes): number {
  return (engine as unknown as { expiringSessions: Map<string, unknown> }).expiringSessions.size
}

/** The byte stream under a client: the socket itself (TCP, TLS), or the socket under a WebSocket. */
export function clientSocket (client: Client): import('node:net').Socket | undefined {
  const conn = client.conn as unknown as { bytesRead?: number }
  if (typeof conn.bytesRead === 'number') return conn as import('node:net').Socket
  return client.req?.socket
}

/** The persistence object Aedes was given (after the node's own wrappers), to wrap its methods. */
export function enginePersistence<P extends object> (engine: Aedes): P {
  return (engine as unknown as { persistence: P }).persistence
}

interface MqEmitterInternals {
  _do: (message: AedesPublishPacket, callback: unknown) => unknown
  _matcher: { match: (topic: string) => unknown[] }
}

/**
 * Calls `onUnrouted(packet)` for every message the engine's router
 * (mqemitter) has no listener for — no connected subscriber. Wraps
 * mqemitter's `_do` and its qlobber `match`: the match result is looked at
 * where it is made, so the cost is two calls and no allocation. Returns undo.
 */
export function observeUnrouted (engine: Aedes, onUnrouted: (packet: AedesPublishPacket) => void): () => void {
  const mq = (engine as unknown as { mq: MqEmitterInternals }).mq
  const matcher = mq._matcher
  const match = matcher.match
  const emit = mq._do
  let current: AedesPublishPacket | null = null
  matcher.match = function observedMatch (this: unknown, topic: string) {
    const found = match.call(this, topic)
    const packet = current
    current = null
    if (found.length === 0 && packet !== null) onUnrouted(packet)
    return found
  }
  mq._do = function observedDo (this: unknown, message: AedesPublishPacket, callback: unknown) {
    current = message
    return emit.call(this, message, callback)
  }
  return () => {
    matcher.match = match
    mq._do = emit
  }
}

interface MqEmitter {
  on: (topic: string, listener: (packet: AedesPublishPacket, cb: () => void) => void, done?: () => void) => void
  removeListener: (topic: string, listener: (packet: AedesPublishPacket, cb: () => void) => void, done?: () => void) => void
}

/** The engine's message router (mqemitter): shared subscription groups subscribe on it directly. */
export function engineMq (engine: Aedes): MqEmitter {
  return (engine as unknown as { mq: MqEmitter }).mq
}

/** A copy of a packet with a fresh broker id and counter (so duplicate checks let it through). */
export function engineNewPacket (engine: Aedes, packet: AedesPublishPacket): AedesPublishPacket {
  return { ...packet, brokerId: engine.id, brokerCounter: ++(engine as unknown as { counter: number }).counter, messageId: undefined } as unknown as AedesPublishPacket
}

// --- the node's operations (lib/service/): what the management API reads of a connected client ---

export interface EngineClientFacts {
  /** the keep-alive in seconds in force (the server's, when it overrode the client's); 0 when none */
  keepalive: number
  /** the will's topic, while the client has one */
  willTopic: string | undefined
  /** QoS 1/2 messages sent and not yet acknowledged (the outbound window) */
  inflight: number
  /** messages waiting for a free slot of the outbound window */
  waiting: number
  /** inbound QoS 2 messages awaiting PUBREL */
  awaitingRel: number
}

interface WindowPacket { topic?: string, payload?: Buffer | string }
interface OutboundWindow {
  inflight: Map<unknown, WindowPacket>
  waiting: WindowPacket[]
  send: (packet: WindowPacket, done: unknown) => void
}

interface ClientInternals {
  _keepaliveInterval?: number
  _will?: { topic?: string } | null
  will?: { topic?: string } | null
  /** made on first use (patches 192, 197): null on a client that never sent QoS 1/2 */
  _outboundWindow?: OutboundWindow | null
  _inboundInflight?: Set<unknown>
}

export function engineClientFacts (client: Client): EngineClientFacts {
  const c = client as unknown as ClientInternals
  const interval = c._keepaliveInterval ?? -1
  return {
    // Aedes keeps 1.5 × keepalive in ms, plus one (connect.js setKeepAlive)
    keepalive: interval > 0 ? Math.round((interval - 1) / 1500) : 0,
    willTopic: (c.will ?? c._will)?.topic ?? undefined,
    inflight: c._outboundWindow?.inflight.size ?? 0,
    waiting: c._outboundWindow?.waiting.length ?? 0,
    awaitingRel: c._inboundInflight?.size ?? 0
  }
}

// --- the node's operations (lib/service/): subscribe and unsubscribe on behalf of a connected client ---

/** MQTT 5 subscription options: No Local, Retain As Publish, Retain Handling. */
export interface SubscriptionOptions { nl?: boolean, rap?: boolean, rh?: 0 | 1 | 2 }

interface ClientOperations {
  subscribe: (packet: { subscriptions: Array<{ topic: string, qos: number } & SubscriptionOptions> }, done: (err?: Error | null) => void) => void
  unsubscribe: (packet: { unsubscriptions: string[] }, done: (err?: Error | null) => void) => void
}

/**
 * Subscribes a connected client as if it had sent SUBSCRIBE (authorization,
 * storage, retained messages), without a SUBACK: the packet has no message id.
 */
export async function engineSubscribe (client: Client, topic: string, qos: 0 | 1 | 2, options: SubscriptionOptions = {}): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    (client as unknown as ClientOperations).subscribe({ subscriptions: [{ ...options, topic, qos }] }, (err) => err ? reject(err) : resolve())
  })
}

/** Unsubscribes a connected client as if it had sent UNSUBSCRIBE, without an UNSUBACK. */
export async function engineUnsubscribe (client: Client, topic: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    (client as unknown as ClientOperations).unsubscribe({ unsubscriptions: [topic] }, (err) => err ? reject(err) : resolve())
  })
}

// --- tracing (issue 7): the packet observers are swapped while a trace runs ---

export type PacketObserver = (client: Client, packet: import('mqtt-packet').Packet) => void

interface EngineObservers { packetIn: PacketObserver | null, packetOut: PacketObserver | null }

/** The engine's packet observers now (the patch reads them on every packet). */
export function packetObservers (engine: Aedes): EngineObservers {
  const e = engine as unknown as EngineObservers
  return { packetIn: e.packetIn, packetOut: e.packetOut }
}

export function setPacketObservers (engine: Aedes, observers: EngineObservers): void {
  Object.assign(engine as unknown as EngineObservers, observers)
}

/**
 * MQTT 5 Server Keep Alive: the engine advertises `_serverKeepAlive` in CONNACK
 * and arms the keep-alive timer with it instead of the client's value (its
 * connect steps read it after authentication).
 */
export function imposeServerKeepAlive (client: Client, seconds: number): void {
  (client as unknown as { _serverKeepAlive?: number })._serverKeepAlive = seconds
}

// --- session records (issue 15 #8) ---

/**
 * Calls `onHeld` each time a client's outbound window holds a message back (in-flight window full):
 * one observer on the engine for every client (patch 197), so an idle connection carries no window
 * and no wrapper. Returns the undo.
 */
export function onWindowHeld (engine: Aedes, onHeld: (client: Client) => void): () => void {
  const broker = engine as unknown as { outboundHeld?: (client: Client) => void }
  broker.outboundHeld = onHeld
  return () => { delete broker.outboundHeld }
}

/** Bytes of topic and payload the client's outbound window holds (in flight and waiting). */
export function engineWindowBytes (client: Client): number {
  const window = (client as unknown as ClientInternals)._outboundWindow
  if (window === undefined || window === null) return 0
  let bytes = 0
  for (const packets of [window.inflight.values(), window.waiting]) {
    for (const p of packets) bytes += (p.topic?.length ?? 0) + (p.payload?.length ?? 0)
  }
  return bytes
}
