// The node service: the one facade the management API (and later broker_ctl
// and the cluster RPC) call. It reads the node's parts and answers in SPEC's
// record shapes (§2.1, §2.3, §2.5–2.8, §2.10, §2.13, §2.14, §2.16), and runs
// the operations that change the node (kick, ACL cache, plugins, settings,
// banned entries). Nothing outside lib/ reaches the parts any other way.
import { readFile } from 'node:fs/promises'
import type { Aedes, Client } from 'aedes'
import type { AccessControl } from '../access/access-control.js'
import { BANNED_KINDS, DEFAULT_BAN_SECONDS, type BannedEntry, type BannedKind, type BannedList } from '../access/banned.js'
import { clientState } from '../access/client-state.js'
import type { Config } from '../config/store.js'
import { clientSocket, engineClient, engineClientFacts, engineClients, engineSubscribe, engineUnsubscribe, engineWindowBytes, onMessageDropped, type EngineClient } from '../engine/internals.js'
import type { SessionQueues } from '../engine/session-queue.js'
import type { StoreIndex } from '../engine/store-index.js'
import type { AedesPersistence } from '../engine/store.js'
import { noteDisconnectReason } from '../hooks/engine-events.js'
import type { ClientInfo } from '../hooks/types.js'
import { connInfo } from '../listeners/conn-info.js'
import type { Listener } from '../listeners/index.js'
import type { BrokerPlugin } from '../plugin-kit/contract.js'
import type { PluginHost, PluginRecord } from '../plugins/host.js'
import { overrideText, readPluginConfig, readPluginConfigLines, removeConfigKeys, resetToDefaults, validatePluginConfig, writeOverrideFile } from '../plugins/plugin-config.js'
import { parseConfigText } from '../config/parse.js'
import { canonicalKey } from '../config/schema.js'
import { changeSetting, OverrideWriteError } from '../config/overrides.js'
import type { V3Metrics } from '../metrics/metrics.js'
import type { V3Stats } from '../metrics/stats.js'
import { Alarms } from '../sys/alarms.js'
import { datetime, megabytes, type BrokerInfo, type NodeStats } from '../sys/node-info.js'
import type { Observability } from '../sys/observability.js'
import type { Cluster } from '../cluster/cluster.js'
import { healthOf, type Health, type NodeLifecycle } from '../node-state.js'
import type { Drain, DrainStatus } from './drain.js'

export type { BannedEntry, BannedKind } from '../access/banned.js'
export type { PluginRecord } from '../plugins/host.js'
export type { Health } from '../node-state.js'
export type { DrainStatus } from './drain.js'

/** SPEC §2.1 */
export interface ConnectionRecord {
  clean_start: boolean
  client_id: string
  connected_at: string
  ipaddress: string
  is_bridge: boolean
  is_super: boolean
  keepalive: number
  mountpoint: string
  node: string
  peercert: string
  port: number
  proto_name: string
  proto_ver: number
  username: string
  will_topic: string
  zone: string
}

/** SPEC §2.3 */
export interface SessionRecord {
  awaiting_rel_len: number
  binding: string
  clean_start: boolean
  client_id: string
  created_at: string
  deliver_msg: number
  enqueue_msg: number
  expiry_interval: number
  heap_size: number
  inflight_len: number
  mailbox_len: number
  max_awaiting_rel: number
  max_inflight: number
  max_mqueue: number
  max_subscriptions: number
  mqueue_dropped: number
  mqueue_len: number
  node: string
  reductions: number
  subscriptions_count: number
  username: string
}

/** SPEC §2.5 (v3, with node) */
export interface SubscriptionRecord { node: string, client_id: string, topic: string, qos: number }

/** SPEC §2.6 */
export interface RouteRecord { topic: string, node: string }

/** SPEC §2.10 (v3) */
export interface ListenerRecord {
  protocol: string
  listen_on: string
  acceptors: number
  max_conns: number
  current_conns: number
  shutdown_count: [] | { closed: number, kicked: number }
}

/** SPEC §2.14, `datatpye` spelt as the spec spells it */
/** SPEC §2.14, plus `kind`: when a change made at run time takes effect (live, restart, fixed) */
export interface ConfigRecord { key: string, value: string, datatpye: string, app: string, kind: string }

/** SPEC §2.15 */
export interface PluginSettingRecord { key: string, value: string, desc: string, required: boolean }

/** EMQ X 3.x alarm record (research notes) */
export type AlarmRecord = ReturnType<typeof Alarms.toEmqx>

/** What a caller publishes as the node (SPEC §4.3); `clientId` names the publisher (default `http`). */
export interface ApiPublishRequest { topic: string, payload?: string, qos?: 0 | 1 | 2, retain?: boolean, clientId?: string }

/** What a caller sends to ban a client (SPEC §2.16); `until` defaults to now + 5 minutes, `by` to `undefined`. */
export interface BanRequest { who: string, as: BannedKind, reason?: string, desc?: string, by?: string, until?: number }

/** Why an operation could not be done; the API maps `kind` to a status. */
export class ServiceError extends Error {
  constructor (readonly kind: 'not_found' | 'bad_value' | 'bad_topic' | 'not_online' | 'already_started' | 'not_started' | 'failed' | 'badrpc', message: string) {
    super(message)
    this.name = 'ServiceError'
  }
}

export interface NodeServiceParts {
  config: Config
  engine: Aedes
  access: AccessControl
  banned: BannedList
  queues: SessionQueues
  observability: Observability
  /** which client ids have stored subscriptions: the persistent sessions, offline ones included */
  storeIndex: StoreIndex
  persistence: Pick<AedesPersistence, 'subscriptionsByClient'>
  /** built after the service (the host is given the service), hence read late */
  plugins: () => PluginHost | undefined
  /** opened after the plugins boot, hence read late */
  listeners: () => Listener[]
  /** joined after the service is built (the cluster serves it), hence read late */
  cluster: () => Cluster
  /** starting → running → draining → stopping (lib/node-state.ts) */
  lifecycle: NodeLifecycle
  /** the store can be used: LevelDB open (`db.status`), and in cluster mode Redis ready (the backend's `available`) */
  storeAvailable: () => boolean
  drain: Drain
  /** the expiry interval (seconds) stored with an offline session's restored timer (lib/engine/session-timers.ts) */
  restoredExpiryInterval: (clientId: string) => number | undefined
}

/** The node service as plugins see it (`ctx.node`). */
export type NodeServiceView = Omit<NodeService, never>

const MQTT5_ADMINISTRATIVE_ACTION = 0x98

/** Settings the configuration listing never shows: a reader of the management API is not given the cluster's keys. */
const SECRET_SETTINGS: ReadonlySet<string> = new Set(['cluster.cookie', 'cluster.redis.password'])

export class NodeService {
  readonly node_status = 'Running'
  /** the cluster this node is part of (a cluster of itself on one node) */
  get cluster (): Cluster {
    return this.parts.cluster()
  }

  readonly #connectedAt = new WeakMap<Client, Date>()
  readonly #dropped = new Map<string, number>()
  readonly #kicked = new Map<string, number>()
  /** the expiry interval (seconds) of each persistent session whose client left, for its offline record */
  readonly #offlineExpiry = new Map<string, number>()

  constructor (private readonly parts: NodeServiceParts) {
    parts.engine.on('clientReady', (client: Client) => this.#connectedAt.set(client, new Date()))
    parts.engine.on('clientDisconnect', (client: Client) => {
      if (client.clean) this.#dropped.delete(client.id)
      const expiry = this.#expiryInterval(client as EngineClient)
      if (expiry > 0) this.#offlineExpiry.set(client.id, expiry)
      else this.#offlineExpiry.delete(client.id)
    })
    onMessageDropped(parts.engine, (_packet, client) => this.#dropped.set(client.id, (this.#dropped.get(client.id) ?? 0) + 1))
  }

  get name (): string {
    return this.parts.config.get('node.name')
  }

  /** A connected client's ClientInfo (what hooks see), or undefined. */
  client (clientId: string): ClientInfo | undefined {
    const client = engineClient(this.parts.engine, clientId)
    return client === undefined ? undefined : clientState(client)?.info
  }

  // --- broker and node (§2.7, §2.8) ---

  /** Every metric, statistic and process figure in the Prometheus text format. */
  async prometheus (): Promise<{ contentType: string, text: string }> {
    const exporter = this.parts.observability.prometheus
    return { contentType: exporter.contentType, text: await exporter.text() }
  }

  brokerInfo (): BrokerInfo {
    return this.parts.observability.brokerInfo()
  }

  /** Single-node form: memory in bytes; `listForm` writes memory as `<n>M` (the list form). */
  async nodeStats (listForm = false): Promise<Omit<NodeStats, 'memory_total' | 'memory_used'> & { memory_total: number | string, memory_used: number | string }> {
    const stats = await this.parts.observability.nodeStats()
    return listForm ? { ...stats, memory_total: megabytes(stats.memory_total), memory_used: megabytes(stats.memory_used) } : stats
  }

  // --- health and drain (issue 10) ---

  /**
   * Whether the node serves: `reasons` empty when it accepts MQTT. `readiness`
   * adds the checks that decide whether clients should be sent here (cluster:
   * the link to the other nodes).
   */
  health ({ readiness = false } = {}): Health {
    const more: string[] = []
    // readiness also asks that a cluster node still reaches the others
    if (readiness && this.cluster?.enabled === true && !this.cluster.linked()) more.push('cluster_unavailable')
    return healthOf(this.parts.lifecycle.state, { storeAvailable: this.parts.storeAvailable(), more })
  }

  /** Stops accepting connections and disconnects the clients at `rate` per second (default `node.drain_rate`). */
  drain (rate?: number): DrainStatus {
    if (rate !== undefined && (!Number.isInteger(rate) || rate < 1)) throw new ServiceError('bad_value', 'rate must be a whole number of clients per second, at least 1')
    const state = this.parts.lifecycle.state
    if (state !== 'running' && state !== 'draining') throw new ServiceError('failed', `the node is ${state}`)
    return this.parts.drain.start(rate ?? this.parts.config.get('node.drain_rate'))
  }

  drainStatus (): DrainStatus {
    return this.parts.drain.status()
  }

  // --- metrics, statistics, alarms (§2.11, §2.12) ---

  metrics (): V3Metrics {
    return this.parts.observability.metricsV3()
  }

  stats (): V3Stats {
    return this.parts.observability.statsV3()
  }

  /** §2.11 with the v2 keys (`packets/disconnect`, no auth/expired/forward keys). */
  metricsV2 (): Record<string, number> {
    return this.parts.observability.metricsV2()
  }

  /** §2.12 with the v2 keys (`clients/*` for connections, no persistent/shared keys). */
  statsV2 (): Record<string, number> {
    return this.parts.observability.statsV2()
  }

  /** The alarms raised and not cleared, oldest first, in EMQ X 3.x's record form. */
  alarms (): AlarmRecord[] {
    return this.parts.observability.alarms.present().map((alarm) => Alarms.toEmqx(alarm))
  }

  // --- connections, sessions, subscriptions, routes ---

  connections (): ConnectionRecord[] {
    return this.#online().map((c) => this.#connection(c))
  }

  connection (clientId: string): ConnectionRecord[] {
    const client = this.#onlineClient(clientId)
    return client === undefined ? [] : [this.#connection(client)]
  }

  /** The connected clients' sessions, then the persistent sessions whose client is offline (from the store). */
  async sessions (): Promise<SessionRecord[]> {
    const online = this.#online()
    const connected = new Set(online.map((c) => c.id))
    const offline: SessionRecord[] = []
    for (const clientId of (await this.#offlineReported()).sort()) {
      if (connected.has(clientId) || engineClient(this.parts.engine, clientId)?.closed === false) continue
      const record = await this.#offlineSession(clientId)
      if (record !== undefined) offline.push(record)
    }
    return [...online.map((c) => this.#session(c)), ...offline]
  }

  async session (clientId: string): Promise<SessionRecord[]> {
    const client = this.#onlineClient(clientId)
    if (client !== undefined) return [this.#session(client)]
    if (engineClient(this.parts.engine, clientId)?.closed === false) return []
    if (!(await this.#offlineReported()).includes(clientId)) return []
    const record = await this.#offlineSession(clientId)
    return record === undefined ? [] : [record]
  }

  /**
   * The offline persistent sessions this node lists. In a cluster the store
   * is shared: one node (the first live one) lists them, so a cluster-wide
   * listing has each once.
   */
  async #offlineReported (): Promise<string[]> {
    if (this.cluster?.enabled === true && (await this.cluster.nodes())[0] !== this.name) return []
    return await this.parts.storeIndex.clientsWithSubscriptions()
  }

  subscriptions (): SubscriptionRecord[] {
    return this.#online().flatMap((c) => this.#subscriptionsOf(c))
  }

  clientSubscriptions (clientId: string): SubscriptionRecord[] {
    const client = this.#onlineClient(clientId)
    return client === undefined ? [] : this.#subscriptionsOf(client)
  }

  /** One route per distinct subscribed filter of the connected clients. */
  routes (): RouteRecord[] {
    const topics = new Set(this.#online().flatMap((c) => Object.keys(c.subscriptions)))
    return [...topics].sort().map((topic) => ({ topic, node: this.name }))
  }

  route (topic: string): RouteRecord[] {
    return this.routes().filter((r) => r.topic === topic)
  }

  // --- listeners (§2.10) ---

  /** The MQTT listeners, then those the plugins serve (the management API's `http:management` …). */
  listeners (): ListenerRecord[] {
    const mqtt = this.parts.listeners().map((l): ListenerRecord => {
      const closed = l.gate.counters.closed
      const kicked = this.#kicked.get(l.id) ?? 0
      return {
        protocol: l.protocol,
        listen_on: `${l.address.host}:${l.address.port}`,
        acceptors: l.acceptors,
        max_conns: l.gate.maxConnections,
        current_conns: l.gate.counters.current,
        shutdown_count: closed === 0 && kicked === 0 ? [] : { closed, kicked }
      }
    })
    return [...mqtt, ...this.parts.plugins()?.listenerRecords() ?? []]
  }

  // --- plugins (§2.13) ---

  async plugins (): Promise<PluginRecord[]> {
    return await this.#host().list()
  }

  async loadPlugin (name: string): Promise<void> {
    await this.#pluginOperation(async () => await this.#host().load(name))
  }

  async unloadPlugin (name: string): Promise<void> {
    await this.#pluginOperation(async () => await this.#host().unload(name))
  }

  /** Re-reads a plugin's settings and restarts it (loads it when inactive). */
  async reloadPlugin (name: string): Promise<void> {
    // an unknown plugin is inactive, so reload goes to load, which refuses it (not_found)
    await this.#pluginOperation(async () => await this.#host().reload(name))
  }

  /**
   * A plugin's settings (SPEC §2.15), the values in force (etc/plugins/<name>.conf
   * with data/plugins/<name>.conf over it): through the plugin module's
   * `describeSettings(settings)` when it exports one, else every key of those
   * files with an empty description. Keys set in the files are required.
   */
  async pluginSettings (name: string): Promise<PluginSettingRecord[]> {
    const host = this.#host()
    const file = await this.#pluginOperation(() => host.configFile(name))
    const lines = await readPluginConfig(file, host.overrideFile(name))
    const settings: Record<string, string> = {}
    for (const line of lines) settings[line.key] = line.value
    const namespace = await this.#pluginOperation(async () => await host.module(name))
    if (typeof namespace.describeSettings === 'function') {
      return (namespace.describeSettings as (s: Record<string, string>) => PluginSettingRecord[])(settings)
    }
    return Object.entries(settings).map(([key, value]) => ({ key, value, desc: '', required: true }))
  }

  /**
   * Sets some of a plugin's settings in data/plugins/<name>.conf (etc/ is left
   * as the operator wrote it; a value equal to etc/'s removes its override):
   * validated with its schema together with the rest of its settings (a
   * refusal leaves the files untouched), written in one step, then the plugin
   * reloads if it is active. `reloadLater` answers before the reload (a plugin
   * reloading itself).
   */
  async setPluginSettings (name: string, values: Readonly<Record<string, string | null>>, { reloadLater = false } = {}): Promise<void> {
    const host = this.#host()
    const file = await this.#pluginOperation(() => host.configFile(name))
    const overrideFile = host.overrideFile(name)
    const namespace = await this.#pluginOperation(async () => await host.module(name))
    const plugin = namespace.default as BrokerPlugin<unknown>
    let text: string
    try {
      const base = await readPluginConfigLines(file)
      const { set, unset } = resetToDefaults(plugin.schema, base, values, file)
      text = removeConfigKeys(overrideText(await readText(overrideFile), base, set, overrideFile, name), unset)
      const config = validatePluginConfig(plugin.schema, [...base, ...parseConfigText(text, overrideFile)], file)
      // what the plugin's load would refuse is refused now, not saved to fail every later load
      await host.check(name, config)
    } catch (err) {
      throw new ServiceError('bad_value', (err as Error).message)
    }
    await writeOverrideFile(overrideFile, text)
    if (!host.isActive(name)) return
    if (!reloadLater) {
      await host.reload(name)
      return
    }
    setTimeout(() => {
      host.reload(name).catch((err: Error) => this.parts.observability.logger.error({ err, plugin: name }, 'plugin reload after a settings change failed'))
    }, 0)
  }

  // --- configuration (§2.14) ---

  /** Every setting; a secret one (SECRET_SETTINGS) shows `******` when set, never its value. */
  configs (): ConfigRecord[] {
    return this.parts.config.items().map(({ key, value, datatype, app, kind }) => ({ key, value: SECRET_SETTINGS.has(key) && value !== '' ? '******' : value, datatpye: datatype, app, kind }))
  }

  /**
   * Changes one setting of `app` now (parts that read it act on it at once, or
   * on the `change` event) and keeps it in <data_dir>/configs.override when
   * the configuration has overrides (lib/config/overrides.ts).
   */
  setConfig (app: string, key: string, value: string, origin = 'management api', nextStart = false): void {
    const item = this.parts.config.items().find((i) => i.key === canonicalKey(key))
    if (item === undefined || item.app !== app) throw new ServiceError('not_found', `no setting ${key} in ${app}`)
    try {
      changeSetting(this.parts.config, key, value, origin, nextStart)
    } catch (err) {
      throw new ServiceError(err instanceof OverrideWriteError ? 'failed' : 'bad_value', (err as Error).message)
    }
  }

  /** Reads `mqtt.acl_file` again and forgets every client's cached answers; a bad file keeps the rules in force. */
  async reloadAcl (): Promise<number> {
    let count: number
    try {
      count = await this.parts.access.reload()
    } catch (err) {
      throw new ServiceError('bad_value', (err as Error).message)
    }
    for (const client of this.#online()) {
      const state = clientState(client)
      if (state !== undefined) this.parts.access.cleanCache(state)
    }
    return count
  }

  // --- banned (§2.16) ---

  banned (): BannedEntry[] {
    return this.parts.banned.list()
  }

  async ban (request: BanRequest): Promise<BannedEntry> {
    if (!(BANNED_KINDS as readonly string[]).includes(request.as)) throw new ServiceError('bad_value', `as must be one of ${BANNED_KINDS.join(', ')}`)
    const entry: BannedEntry = {
      who: request.who,
      as: request.as,
      reason: request.reason ?? '',
      desc: request.desc ?? '',
      by: request.by ?? 'undefined',
      until: request.until ?? Math.floor(Date.now() / 1000) + DEFAULT_BAN_SECONDS
    }
    await this.parts.banned.add(entry)
    return entry
  }

  /** False when there was no such entry. */
  async unban (as: BannedKind, who: string): Promise<boolean> {
    return await this.parts.banned.remove(as, who)
  }

  // --- publish, subscribe, unsubscribe (§4.3) ---

  /** Publishes as the node on behalf of `clientId` (no ACL check: the caller is an authenticated application). */
  async publish ({ topic, payload = '', qos = 0, retain = false }: ApiPublishRequest): Promise<void> {
    if (!validTopicName(topic)) throw new ServiceError('bad_topic', `bad topic name ${JSON.stringify(topic)}`)
    const engine = this.parts.engine
    await new Promise<void>((resolve, reject) => {
      engine.publish({ cmd: 'publish', topic, payload: Buffer.from(payload), qos, retain, dup: false }, (err?: Error | null) => err ? reject(err) : resolve())
    })
  }

  /** Subscribes a connected client, as if it had sent SUBSCRIBE (ACL checked, retained messages sent). */
  async subscribe (clientId: string, topic: string, qos: 0 | 1 | 2): Promise<void> {
    if (!validTopicFilter(topic)) throw new ServiceError('bad_topic', `bad topic filter ${JSON.stringify(topic)}`)
    const client = this.#onlineClient(clientId)
    if (client === undefined) throw new ServiceError('not_online', `client ${clientId} is not online`)
    await engineSubscribe(client, topic, qos)
  }

  async unsubscribe (clientId: string, topic: string): Promise<void> {
    if (!validTopicFilter(topic)) throw new ServiceError('bad_topic', `bad topic filter ${JSON.stringify(topic)}`)
    const client = this.#onlineClient(clientId)
    if (client === undefined) throw new ServiceError('not_online', `client ${clientId} is not online`)
    await engineUnsubscribe(client, topic)
  }

  // --- operations on clients ---

  /** Ends a connection (MQTT 5: DISCONNECT 0x98 administrative action); false when it is not connected here. */
  kick (clientId: string): boolean {
    const client = this.#onlineClient(clientId)
    if (client === undefined) return false
    noteDisconnectReason(client, 'kicked')
    const listener = connInfo(client.conn)?.listener
    if (listener !== undefined) this.#kicked.set(listener, (this.#kicked.get(listener) ?? 0) + 1)
    client.disconnect({ reasonCode: MQTT5_ADMINISTRATIVE_ACTION })
    return true
  }

  /** Forgets a connected client's cached ACL answers for one topic, or all; false when it is not connected here. */
  cleanAclCache (clientId: string, topic?: string): boolean {
    const client = this.#onlineClient(clientId)
    const state = client === undefined ? undefined : clientState(client)
    if (state === undefined) return false
    this.parts.access.cleanCache(state, topic)
    return true
  }

  // --- records ---

  #online (): EngineClient[] {
    return engineClients(this.parts.engine).filter((c) => c.connected && !c.closed)
  }

  #onlineClient (clientId: string): EngineClient | undefined {
    const client = engineClient(this.parts.engine, clientId)
    return client !== undefined && client.connected && !client.closed ? client : undefined
  }

  #connection (client: EngineClient): ConnectionRecord {
    const info = clientState(client)?.info
    const conn = connInfo(client.conn)
    const facts = engineClientFacts(client)
    return {
      clean_start: client.clean,
      client_id: client.id,
      connected_at: datetime(this.#connectedAt.get(client) ?? new Date()),
      ipaddress: conn?.ipAddress ?? 'undefined',
      is_bridge: false,
      is_super: info?.isSuperuser ?? false,
      keepalive: facts.keepalive,
      mountpoint: text(info?.mountpoint),
      node: this.name,
      peercert: conn?.peercert ?? 'nossl',
      port: conn?.port ?? 0,
      proto_name: client.version === 3 ? 'MQIsdp' : 'MQTT',
      proto_ver: client.version,
      username: text(info?.username),
      will_topic: text(facts.willTopic),
      zone: conn?.zone ?? 'external'
    }
  }

  /** Seconds the session outlives its connection: 0 for a clean one, a v5 client's own interval, else the zone's. */
  #expiryInterval (client: EngineClient): number {
    const persistent = !client.clean || (client.version === 5 && client.sessionExpiryInterval > 0)
    if (!persistent) return 0
    return client.version === 5 ? client.sessionExpiryInterval : Math.round(this.parts.config.get('zone.external.session_expiry_interval') / 1000)
  }

  #session (client: EngineClient): SessionRecord {
    const { config, observability } = this.parts
    const facts = engineClientFacts(client)
    const counts = observability.sessions.get(client.id)
    const subscriptions = Object.keys(client.subscriptions)
    const socket = clientSocket(client)
    return {
      awaiting_rel_len: facts.awaitingRel,
      binding: 'local',
      clean_start: client.clean,
      client_id: client.id,
      created_at: datetime(this.#connectedAt.get(client) ?? new Date()),
      deliver_msg: counts.delivered,
      enqueue_msg: counts.enqueued,
      expiry_interval: this.#expiryInterval(client),
      heap_size: sessionHeapEstimate(subscriptions, engineWindowBytes(client) + (socket?.writableLength ?? 0) + (socket?.readableLength ?? 0)),
      // the messages the session holds in memory, not yet written to the client
      mailbox_len: facts.waiting,
      // an Erlang process figure with no Node.js counterpart (a session is not a process here): 0
      reductions: 0,
      inflight_len: facts.inflight,
      max_awaiting_rel: config.get('zone.external.max_awaiting_rel'),
      max_inflight: config.get('zone.external.max_inflight'),
      max_mqueue: config.get('zone.external.max_mqueue_len'),
      max_subscriptions: config.get('zone.external.max_subscriptions'),
      mqueue_dropped: this.#dropped.get(client.id) ?? 0,
      // waiting in the outbound window, plus what a persistent session holds in the store beyond the in-flight ones
      mqueue_len: facts.waiting + (client.clean ? 0 : Math.max(0, this.parts.queues.length(client.id) - facts.inflight - facts.waiting)),
      node: this.name,
      subscriptions_count: subscriptions.length,
      username: text(clientState(client)?.info.username)
    }
  }

  /**
   * A persistent session whose client is offline, from the store: its stored subscriptions and queued messages.
   * What only a live session knows is not kept: `created_at` "undefined", `username` "undefined". The message
   * counters are those seen since this node started. `expiry_interval` is the client's own: seen when it left,
   * or stored with its expiry timer when the session was restored at start (the zone's when neither).
   */
  async #offlineSession (clientId: string): Promise<SessionRecord | undefined> {
    const { config, persistence, queues, observability } = this.parts
    const subscriptions = await persistence.subscriptionsByClient({ id: clientId }) as Array<{ topic: string }>
    if (subscriptions.length === 0) return undefined
    const counts = observability.sessions.get(clientId)
    return {
      awaiting_rel_len: 0,
      binding: 'local',
      clean_start: false,
      client_id: clientId,
      created_at: 'undefined',
      deliver_msg: counts.delivered,
      enqueue_msg: counts.enqueued,
      expiry_interval: this.#offlineExpiry.get(clientId) ?? this.parts.restoredExpiryInterval(clientId) ?? Math.round(config.get('zone.external.session_expiry_interval') / 1000),
      // the engine holds an offline session's subscriptions in memory; its queue is in the store
      heap_size: sessionHeapEstimate(subscriptions.map((s) => s.topic), 0),
      inflight_len: 0,
      mailbox_len: queues.length(clientId),
      max_awaiting_rel: config.get('zone.external.max_awaiting_rel'),
      max_inflight: config.get('zone.external.max_inflight'),
      max_mqueue: config.get('zone.external.max_mqueue_len'),
      max_subscriptions: config.get('zone.external.max_subscriptions'),
      mqueue_dropped: this.#dropped.get(clientId) ?? 0,
      mqueue_len: queues.length(clientId),
      node: this.name,
      reductions: 0,
      subscriptions_count: subscriptions.length,
      username: 'undefined'
    }
  }

  #subscriptionsOf (client: EngineClient): SubscriptionRecord[] {
    return Object.entries(client.subscriptions).map(([topic, sub]) => ({ node: this.name, client_id: client.id, topic, qos: sub.qos }))
  }

  #host (): PluginHost {
    const host = this.parts.plugins()
    if (host === undefined) throw new ServiceError('failed', 'the plugin host is not running yet')
    return host
  }

  async #pluginOperation<T> (operation: () => T | Promise<T>): Promise<T> {
    try {
      return await operation()
    } catch (err) {
      const code = (err as { code?: string }).code
      if (code === 'not_found' || code === 'already_started' || code === 'not_started') throw new ServiceError(code, (err as Error).message)
      throw err
    }
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

/** A topic name: not empty, no wildcard, no NUL. */
function validTopicName (topic: string): boolean {
  return topic !== '' && !/[+#]/.test(topic) && !topic.includes('\u0000')
}

/** A topic filter: not empty, no NUL, `+` a whole level, `#` a whole last level. */
function validTopicFilter (filter: string): boolean {
  if (filter === '' || filter.includes('\u0000')) return false
  const levels = filter.split('/')
  return levels.every((level, i) => (!level.includes('+') || level === '+') && (!level.includes('#') || (level === '#' && i === levels.length - 1)))
}

/** A file's text; empty when it does not exist. */
async function readText (file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return ''
    throw err
  }
}

/** SPEC §2: a string field with no value holds `undefined`. */
function text (value: string | undefined): string {
  return value === undefined || value === '' ? 'undefined' : value
}
