// Who is connected and what their sessions hold: connections, sessions
// (offline persistent ones from the store), subscriptions, routes.
import { clientState } from '../access/client-state.js'
import { clientSocket, engineClient, engineClientFacts, engineWindowBytes, type EngineClient, type EngineClientFacts } from '../engine/internals.js'
import type { ClientInfo } from '../hooks/types.js'
import { connInfo } from '../listeners/conn-info.js'
import type { OperationContext } from './context.js'
import type { ClientLoadFacts, ConnectionFacts, RouteFacts, SessionFacts, SubscriptionFacts } from './facts.js'

export interface ClientQueries {
  /** A connected client's ClientInfo (what hooks see), or undefined. */
  client: (clientId: string) => ClientInfo | undefined
  /** Every connected client's ClientInfo. */
  clients: () => ClientInfo[]
  connections: () => ConnectionFacts[]
  connection: (clientId: string) => ConnectionFacts[]
  /** The connected clients' sessions, then the persistent sessions whose client is offline (from the store). */
  sessions: () => Promise<SessionFacts[]>
  session: (clientId: string) => Promise<SessionFacts[]>
  subscriptions: () => SubscriptionFacts[]
  clientSubscriptions: (clientId: string) => SubscriptionFacts[]
  /** One route per distinct subscribed filter of the connected clients. */
  routes: () => RouteFacts[]
  route: (topic: string) => RouteFacts[]
  /** What each connected client holds and moved: queue, in-flight window, buffered and socket bytes (broker_recon's top clients). */
  clientLoad: () => ClientLoadFacts[]
}

export function clientQueries (context: OperationContext): ClientQueries {
  const { parts, tracking } = context

  const connection = (client: EngineClient): ConnectionFacts => {
    const info = clientState(client)?.info
    const conn = connInfo(client.conn)
    const facts = engineClientFacts(client)
    return {
      node: context.name,
      client_id: client.id,
      username: info?.username,
      clean_start: client.clean,
      connected_at: tracking.connectedAt(client),
      ipaddress: conn?.ipAddress,
      port: conn?.port,
      is_super: info?.isSuperuser ?? false,
      keepalive: facts.keepalive,
      mountpoint: info?.mountpoint,
      peercert: conn?.peercert,
      proto_name: conn?.protoName,
      proto_ver: conn?.protoVer ?? client.version,
      will_topic: facts.willTopic,
      zone: conn?.zone
    }
  }

  const limits = (): Pick<SessionFacts, 'max_awaiting_rel' | 'max_inflight' | 'max_mqueue' | 'max_subscriptions'> => ({
    max_awaiting_rel: parts.config.get('zone.external.max_awaiting_rel'),
    max_inflight: parts.config.get('zone.external.max_inflight'),
    max_mqueue: parts.config.get('zone.external.max_mqueue_len'),
    max_subscriptions: parts.config.get('zone.external.max_subscriptions')
  })

  /** Message bytes a connected client holds: its outbound window and its socket's buffers. */
  const buffered = (client: EngineClient): number => {
    const socket = clientSocket(client)
    return engineWindowBytes(client) + (socket?.writableLength ?? 0) + (socket?.readableLength ?? 0)
  }

  /** Waiting in the outbound window, plus what a persistent session holds in the store beyond the in-flight ones. */
  const queued = (client: EngineClient, facts: EngineClientFacts): number =>
    facts.waiting + (client.clean ? 0 : Math.max(0, parts.queues.length(client.id) - facts.inflight - facts.waiting))

  const session = (client: EngineClient): SessionFacts => {
    const facts = engineClientFacts(client)
    const counts = parts.observability.sessions.get(client.id)
    const subscriptions = Object.keys(client.subscriptions)
    return {
      node: context.name,
      client_id: client.id,
      username: clientState(client)?.info.username,
      clean_start: client.clean,
      created_at: tracking.connectedAt(client),
      expiry_interval: tracking.expiryInterval(client),
      heap_size: sessionHeapEstimate(subscriptions, buffered(client)),
      awaiting_rel_len: facts.awaitingRel,
      inflight_len: facts.inflight,
      // the messages the session holds in memory, not yet written to the client
      mailbox_len: facts.waiting,
      mqueue_len: queued(client, facts),
      mqueue_dropped: tracking.dropped(client.id),
      deliver_msg: counts.delivered,
      enqueue_msg: counts.enqueued,
      subscriptions_count: subscriptions.length,
      ...limits()
    }
  }

  /**
   * A persistent session whose client is offline, from the store: its stored subscriptions and queued messages.
   * What only a live session knows is not kept (`created_at`, `username`). The message counters are those seen
   * since this node started. `expiry_interval` is the client's own: seen when it left, or stored with its expiry
   * timer when the session was restored at start (the zone's when neither).
   */
  const offlineSession = async (clientId: string): Promise<SessionFacts | undefined> => {
    const subscriptions = await parts.persistence.subscriptionsByClient({ id: clientId }) as Array<{ topic: string }>
    if (subscriptions.length === 0) return undefined
    const counts = parts.observability.sessions.get(clientId)
    const queued = parts.queues.length(clientId)
    return {
      node: context.name,
      client_id: clientId,
      clean_start: false,
      expiry_interval: tracking.offlineExpiry(clientId) ?? parts.restoredExpiryInterval(clientId) ?? tracking.zoneExpiryInterval(),
      // the engine holds an offline session's subscriptions in memory; its queue is in the store
      heap_size: sessionHeapEstimate(subscriptions.map((s) => s.topic), 0),
      awaiting_rel_len: 0,
      inflight_len: 0,
      mailbox_len: queued,
      mqueue_len: queued,
      mqueue_dropped: tracking.dropped(clientId),
      deliver_msg: counts.delivered,
      enqueue_msg: counts.enqueued,
      subscriptions_count: subscriptions.length,
      ...limits()
    }
  }

  /**
   * The offline persistent sessions this node lists. In a cluster the store
   * is shared: one node (the first live one) lists them, so a cluster-wide
   * listing has each once.
   */
  const offlineReported = async (): Promise<string[]> => {
    const cluster = context.cluster()
    if (cluster?.enabled === true && (await cluster.nodes())[0] !== context.name) return []
    return await parts.storeIndex.clientsWithSubscriptions()
  }

  const load = (client: EngineClient): ClientLoadFacts => {
    const facts = engineClientFacts(client)
    const socket = clientSocket(client)
    const held = buffered(client)
    return {
      client_id: client.id,
      mqueue_len: queued(client, facts),
      inflight_len: facts.inflight,
      awaiting_rel_len: facts.awaitingRel,
      heap_size: sessionHeapEstimate(Object.keys(client.subscriptions), held),
      buffered: held,
      recv_oct: socket?.bytesRead ?? 0,
      send_oct: socket?.bytesWritten ?? 0
    }
  }

  const subscriptionsOf = (client: EngineClient): SubscriptionFacts[] =>
    Object.entries(client.subscriptions).map(([topic, sub]) => ({ node: context.name, client_id: client.id, topic, qos: sub.qos }))

  const routes = (): RouteFacts[] => {
    const topics = new Set(context.online().flatMap((c) => Object.keys(c.subscriptions)))
    return [...topics].sort().map((topic) => ({ topic, node: context.name }))
  }

  const infoOf = (client: EngineClient | undefined): ClientInfo | undefined => client === undefined ? undefined : clientState(client)?.info

  return {
    client: (clientId) => infoOf(engineClient(parts.engine, clientId)),
    clients: () => context.online().flatMap((c) => infoOf(c) ?? []),
    connections: () => context.online().map(connection),
    connection: (clientId) => {
      const client = context.onlineClient(clientId)
      return client === undefined ? [] : [connection(client)]
    },
    sessions: async () => {
      const online = context.online()
      const connected = new Set(online.map((c) => c.id))
      const offline: SessionFacts[] = []
      for (const clientId of (await offlineReported()).sort()) {
        if (connected.has(clientId) || engineClient(parts.engine, clientId)?.closed === false) continue
        const facts = await offlineSession(clientId)
        if (facts !== undefined) offline.push(facts)
      }
      return [...online.map(session), ...offline]
    },
    session: async (clientId) => {
      const client = context.onlineClient(clientId)
      if (client !== undefined) return [session(client)]
      if (engineClient(parts.engine, clientId)?.closed === false) return []
      if (!(await offlineReported()).includes(clientId)) return []
      const facts = await offlineSession(clientId)
      return facts === undefined ? [] : [facts]
    },
    subscriptions: () => context.online().flatMap(subscriptionsOf),
    clientSubscriptions: (clientId) => {
      const client = context.onlineClient(clientId)
      return client === undefined ? [] : subscriptionsOf(client)
    },
    routes,
    route: (topic) => routes().filter((r) => r.topic === topic),
    clientLoad: () => context.online().map(load)
  }
}

/** An allowance per session for what it costs without its contents (client object, parser, socket, timers): an estimate. */
const SESSION_BASE_BYTES = 8192
/** A subscription's entry in the engine's maps and the store's trie, beside its filter text. */
const SUBSCRIPTION_BYTES = 200

/**
 * SPEC §2.3 `heap_size`: a session is not a process here, so this is an
 * estimate in bytes: a base per session, each subscription (its filter and
 * entries), and the message bytes it holds (`held`: outbound window and
 * socket buffers).
 */
function sessionHeapEstimate (filters: string[], held: number): number {
  let bytes = SESSION_BASE_BYTES + held
  for (const filter of filters) bytes += SUBSCRIPTION_BYTES + filter.length * 2
  return bytes
}
