// Observability of one node (issue 5): metrics (SPEC §2.11), statistics
// (§2.12), $SYS topics (§6), alarms and the system monitor. The node creates
// it before the engine (its packet observers go into the engine's options)
// and attaches it once the engine and listeners exist.
//
// Cost on the message path: the engine calls `Metrics.packetIn` /
// `packetOut` directly for every packet (one call, a switch, integer
// increments); the router check for unrouted messages is two calls (see
// lib/metrics/message-counters.ts). Everything else here runs on connect,
// subscribe, disconnect, or on timers.
import type { Aedes, Client, Subscription } from 'aedes'
import { clientState } from '../access/client-state.js'
import type { Config } from '../config/store.js'
import type { EngineCallbacks } from '../engine/create.js'
import { clientSocket, engineClients, engineOfflineSessions, onWindowHeld, type EngineClient } from '../engine/internals.js'
import type { RetainedMessages } from '../engine/retained.js'
import type { SessionQueues } from '../engine/session-queue.js'
import type { SharedSubscriptions } from '../engine/shared-subscriptions.js'
import { noteConnectPacket } from '../hooks/connect-info.js'
import type { HookRegistry } from '../hooks/registry.js'
import type { Listener } from '../listeners/index.js'
import type { Logger } from '../log.js'
import { ByteCounter } from '../metrics/bytes.js'
import { countMessages } from '../metrics/message-counters.js'
import { Metrics, type V3Metrics } from '../metrics/metrics.js'
import { PluginCounters } from '../metrics/plugin-counters.js'
import { PrometheusExporter, type ProcessFigures } from '../metrics/prometheus.js'
import { RouteTable } from '../metrics/routes.js'
import { SessionCounters } from '../metrics/session-counters.js'
import { Stats, type V3Stats } from '../metrics/stats.js'
import { Alarms } from './alarms.js'
import { guardDollarRetained } from './dollar-retained.js'
import { brokerInfo, maxFds, nodeStats, openFds, type BrokerInfo, type NodeStats } from './node-info.js'
import { OsMon } from './os-mon.js'
import { SysMon, type WatchedConnection } from './sysmon.js'
import { SysTopics, sysPrefix, type SysPublish } from './sys-topics.js'

export interface ObservedParts {
  engine: Aedes
  listeners: Listener[]
  /** the clients' retained messages (counted by the plugin that keeps them) */
  retained: RetainedMessages
  queues: SessionQueues
  hooks: HookRegistry
  /** shared subscription groups: a message no member could take counts as dropped */
  shared?: SharedSubscriptions
  /** offline persistent sessions the engine does not hold: their expiry timers were restored from the store at start */
  restoredSessions?: () => number
}

export class Observability {
  readonly startedAt = Date.now()
  readonly bytes = new ByteCounter()
  readonly metrics = new Metrics(this.bytes)
  /** counters plugins add (`ctx.metrics.counter`) */
  readonly pluginCounters = new PluginCounters()
  readonly stats = new Stats()
  readonly routes = new RouteTable()
  readonly alarms: Alarms
  readonly osMon: OsMon
  readonly sysmon: SysMon
  readonly sysTopics: SysTopics
  readonly prometheus: PrometheusExporter
  /** The cluster's node names for `$SYS/brokers`; the cluster replaces this. */
  nodeNames: () => string[] = () => [this.config.get('node.name')]

  #parts: ObservedParts | null = null
  #stopped = false
  #refreshQueued = false
  readonly #persistentOnline = new Set<Client>()
  /** per-session `deliver_msg` / `enqueue_msg` (SPEC §2.3) */
  readonly sessions = new SessionCounters()
  readonly #undo: Array<() => void> = []

  constructor (readonly config: Config, readonly logger: Logger) {
    const publish = this.publish
    this.alarms = new Alarms((suffix, payload) => publish(`${sysPrefix(config)}${suffix}`, payload, 0, false), logger)
    this.osMon = new OsMon(config, this.alarms, () => this.#parts?.listeners ?? [])
    this.sysmon = new SysMon(config, logger, (kind, text) => publish(`${sysPrefix(config)}sysmon/${kind}`, text, 0, false), () => this.#connections())
    this.sysTopics = new SysTopics(config, publish, {
      startedAt: this.startedAt,
      nodes: () => this.nodeNames(),
      metrics: () => this.metricsV3(),
      stats: () => this.statsV3()
    })
    this.prometheus = new PrometheusExporter({
      node: config.get('node.name'),
      metrics: () => this.metricsV3(),
      pluginMetrics: () => this.pluginCounters.helps(),
      stats: () => this.statsV3(),
      process: async () => await this.#processFigures()
    })
    this.metrics.onConnect = (client, packet) => {
      const socket = clientSocket(client)
      if (socket !== undefined) this.bytes.track(socket)
      noteConnectPacket(client, packet as { keepalive?: number })
    }
  }

  /** Packet observers for the engine's options. */
  get engineCallbacks (): Pick<EngineCallbacks, 'packetIn' | 'packetOut' | 'packetMissed'> {
    return { packetIn: this.metrics.packetIn, packetOut: this.metrics.packetOut, packetMissed: this.metrics.packetMissed }
  }

  attach (parts: ObservedParts): void {
    this.#parts = parts
    const { engine, retained } = parts
    this.#undo.push(countMessages(engine, retained, this.metrics, this.#statsChanged), guardDollarRetained(engine))
    if (parts.shared !== undefined) {
      const shared = parts.shared
      shared.onDropped = (packet) => this.metrics.dropped(packet.qos)
      this.#undo.push(() => { shared.onDropped = undefined })
    }
    const { sessions } = this
    this.metrics.onPublishSent = (client) => { sessions.of(client.id).delivered++ }
    parts.queues.onQueuedOffline = (clientId) => { sessions.of(clientId).enqueued++ }
    this.#undo.push(onWindowHeld(engine, (client) => { sessions.of(client.id).enqueued++ }))
    this.#undo.push(() => { parts.queues.onQueuedOffline = undefined })
    this.#on('client', (client: Client) => {
      if (!client.clean) this.#persistentOnline.add(client)
      this.#statsChanged()
    })
    this.#on('clientReady', (client: Client) => {
      // a client that closed at once may be ready after its disconnect
      if (!client.closed || !client.clean) this.routes.sync(client.id, Object.keys((client as EngineClient).subscriptions))
      this.#statsChanged()
    })
    this.#on('clientDisconnect', (client: Client) => {
      this.#persistentOnline.delete(client)
      if (client.clean) {
        this.routes.drop(client.id)
        sessions.forget(client.id)
      }
      this.#statsChanged()
    })
    this.#on('subscribe', (subs: Subscription[], client: Client) => {
      for (const sub of subs) if (sub.qos < 0x80) this.routes.add(client.id, sub.topic)
      this.#statsChanged()
    })
    this.#on('unsubscribe', (topics: string[], client: Client) => {
      for (const topic of topics) this.routes.remove(client.id, topic)
      this.#statsChanged()
    })
    // a persistent session ended while offline
    this.#on('sessionExpired', (client: Client) => {
      this.routes.drop(client.id)
      sessions.forget(client.id)
      this.#statsChanged()
    })
    this.#on('sessionLimitReached', (client: Client, info: { reason: string }) => {
      if (info.reason === 'sessionExpiry') this.routes.drop(client.id)
      this.#statsChanged()
    })
    this.#refreshStats()
    this.sysTopics.start()
    this.osMon.start()
    this.sysmon.start()
  }

  stop (): void {
    this.#stopped = true
    this.sysTopics.stop()
    this.osMon.stop()
    this.sysmon.stop()
    for (const undo of this.#undo.splice(0)) undo()
  }

  /** Publishes a message of the node's own (client null: the ACL lets the node publish into $SYS). */
  readonly publish: SysPublish = (topic, payload, qos, retain) => {
    const engine = this.#parts?.engine
    if (engine === undefined || engine.closed || this.#stopped) return
    engine.publish({ cmd: 'publish', topic, payload: Buffer.from(payload), qos, retain, dup: false }, () => {})
  }

  /** SPEC §2.11's keys, then the counters loaded plugins add */
  metricsV3 (): V3Metrics {
    return { ...this.metrics.toV3(), ...this.pluginCounters.values() }
  }

  metricsV2 (): Record<string, number> {
    return { ...this.metrics.toV2(), ...this.pluginCounters.values() }
  }

  statsV3 (): V3Stats {
    this.#refreshStats()
    return this.stats.toV3()
  }

  statsV2 (): Record<string, number> {
    this.#refreshStats()
    return this.stats.toV2()
  }

  /** SPEC §2.7 (add `node` for the list form). */
  brokerInfo (): BrokerInfo {
    return brokerInfo(this.startedAt)
  }

  /** SPEC §2.8 (single-node form: memory in bytes; see node-info.ts for the Node.js meanings). */
  async nodeStats (): Promise<NodeStats> {
    return await nodeStats(this.config.get('node.name'), this.startedAt, this.#parts?.engine.connectedClients ?? 0)
  }

  /** Runs every alarm check and the system monitor now (tests; `broker_ctl`). */
  async check (): Promise<void> {
    await this.osMon.check()
    this.sysmon.check()
  }

  * #connections (): Generator<WatchedConnection> {
    if (this.#parts === null) return
    for (const client of engineClients(this.#parts.engine)) {
      const socket = clientSocket(client)
      if (socket === undefined) continue
      const info = clientState(client)?.info
      yield { clientId: client.id, address: `${info?.ipAddress ?? 'undefined'}:${info?.port ?? 0}`, writableLength: socket.writableLength }
    }
  }

  #on<A extends unknown[]> (event: string, listener: (...args: A) => void): void {
    const engine = this.#parts!.engine as unknown as NodeJS.EventEmitter
    const handler = listener as (...args: unknown[]) => void
    engine.on(event, handler)
    this.#undo.push(() => engine.off(event, handler))
  }

  /** Statistics change with the event that changed them; the engine finishes its own bookkeeping first. */
  readonly #statsChanged = (): void => {
    if (this.#refreshQueued) return
    this.#refreshQueued = true
    queueMicrotask(this.#refreshStats)
  }

  readonly #refreshStats = (): void => {
    this.#refreshQueued = false
    const parts = this.#parts
    if (parts === null) return
    const connections = parts.engine.connectedClients
    const offline = engineOfflineSessions(parts.engine) + (parts.restoredSessions?.() ?? 0)
    const { stats, routes } = this
    stats.set('connections', connections)
    stats.set('sessions', connections + offline)
    stats.set('sessions/persistent', this.#persistentOnline.size + offline)
    stats.set('subscriptions', routes.subscriptions)
    stats.set('subscriptions/shared', routes.shared)
    stats.set('subscribers', routes.subscribers)
    stats.set('topics', routes.topics)
    stats.set('routes', routes.topics)
    stats.set('retained', parts.retained.count())
  }

  async #processFigures (): Promise<ProcessFigures> {
    const memory = process.memoryUsage()
    const cpu = process.cpuUsage()
    const [open, max] = await Promise.all([openFds(), maxFds()])
    return {
      residentMemory: memory.rss,
      heapUsed: memory.heapUsed,
      heapTotal: memory.heapTotal,
      externalMemory: memory.external,
      cpuUserSeconds: cpu.user / 1e6,
      cpuSystemSeconds: cpu.system / 1e6,
      openFds: open,
      maxFds: max,
      startTimeSeconds: Math.floor(this.startedAt / 1000),
      uptimeSeconds: Math.floor((Date.now() - this.startedAt) / 1000),
      alarmsActive: this.alarms.present().length
    }
  }
}
