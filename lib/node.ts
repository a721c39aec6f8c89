// One broker node: opens the store, builds access control, the engine and
// the plugin host, then opens the listeners; stops them in reverse order.
// Nothing else lives here.
import { join, isAbsolute, resolve } from 'node:path'
import type { Aedes, Client } from 'aedes'
import type { Level } from 'level'
import { AccessControl } from './access/access-control.js'
import { createAuthenticate } from './access/authenticate.js'
import { SessionGuard } from './access/session-guard.js'
import { EnhancedAuth } from './access/enhanced-auth.js'
import { BannedList } from './access/banned.js'
import { clientState } from './access/client-state.js'
import type { Config } from './config/store.js'
import { createCallbacks } from './engine/callbacks.js'
import { createEngine } from './engine/create.js'
import { assertEnginePatched } from './engine/patch-check.js'
import { engineClient } from './engine/internals.js'
import { Retainer } from './engine/retainer.js'
import { SessionQueues } from './engine/session-queue.js'
import { SessionTimers } from './engine/session-timers.js'
import { indexStore, storedClientsIndex, type StoreIndex } from './engine/store-index.js'
import { coalesceSubscriptionWrites } from './engine/subscription-writes.js'
import { SharedSubscriptions } from './engine/shared-subscriptions.js'
import type { AedesPersistence } from './engine/store.js'
import { openBackend, type Backend } from './engine/backend.js'
import { mapEngineEvents } from './hooks/engine-events.js'
import { HookRegistry } from './hooks/registry.js'
import { createListeners, type Listener } from './listeners/index.js'
import { followLevel, type Logger } from './log.js'
import type { PublishRequest } from './plugins/contract.js'
import { PluginHost } from './plugins/host.js'
import { pluginStore } from './plugins/plugin-store.js'
import { refusedPacketLog } from './refused-packets.js'
import { createNodeOperations, type NodeOperations } from './service/operations.js'
import { Drain } from './service/drain.js'
import { NodeLifecycle } from './node-state.js'
import { Observability } from './sys/observability.js'
import { CommandRegistry, helpCommand } from './ctl/registry.js'
import { nodeCommands } from './ctl/node-commands.js'
import { controlSocketPath } from './ctl/protocol.js'
import { ControlServer } from './ctl/server.js'
import { Tracer } from './trace/tracer.js'
import { joinCluster, type Clustering } from './cluster/join.js'
import { TimerOwnership } from './cluster/timer-ownership.js'

export interface NodeOptions {
  config: Config
  logger: Logger
  /** the install root that relative paths in the configuration are resolved against */
  root: string
  /** more folders holding broker_* plugins, searched after the install's own */
  pluginDirs?: string[]
}

interface Parts {
  engine: Aedes
  listeners: Listener[]
  retainer: Retainer
  queues: SessionQueues
  shared: SharedSubscriptions
  hooks: HookRegistry
  access: AccessControl
  banned: BannedList
  plugins: PluginHost
  observability: Observability
  db: Level<string, Buffer>
  persistence: AedesPersistence
  backend: Backend
  timers: SessionTimers
  storeIndex: StoreIndex
  tracer: Tracer
  commands: CommandRegistry
  clustering: Clustering
  lifecycle: NodeLifecycle
  service: NodeOperations
}

export class BrokerNode {
  readonly startedAt = new Date()
  readonly engine: Aedes
  readonly listeners: Listener[]
  readonly retainer: Retainer
  readonly queues: SessionQueues
  readonly shared: SharedSubscriptions
  readonly hooks: HookRegistry
  readonly access: AccessControl
  readonly banned: BannedList
  readonly plugins: PluginHost
  readonly observability: Observability
  /** which client ids have anything in the store */
  readonly storeIndex: StoreIndex
  readonly tracer: Tracer
  /** what broker_ctl can run here (the node's commands and the plugins') */
  readonly commands: CommandRegistry
  readonly #clustering: Clustering
  /** what the API, broker_ctl and other nodes call (the node service) */
  readonly service: NodeOperations
  /** starting → running → draining → stopping → stopped; what /status and the drain read */
  readonly lifecycle: NodeLifecycle
  #control: ControlServer | undefined
  readonly #db: Level<string, Buffer>
  readonly #persistence: AedesPersistence
  readonly #backend: Backend
  readonly #timers: SessionTimers
  readonly #unfollowLevel: () => void
  #stopping: Promise<void> | null = null

  private constructor (readonly config: Config, readonly logger: Logger, parts: Parts) {
    this.engine = parts.engine
    this.listeners = parts.listeners
    this.retainer = parts.retainer
    this.queues = parts.queues
    this.shared = parts.shared
    this.hooks = parts.hooks
    this.access = parts.access
    this.banned = parts.banned
    this.plugins = parts.plugins
    this.observability = parts.observability
    this.storeIndex = parts.storeIndex
    this.tracer = parts.tracer
    this.commands = parts.commands
    this.#clustering = parts.clustering
    this.service = parts.service
    this.lifecycle = parts.lifecycle
    this.#db = parts.db
    this.#persistence = parts.persistence
    this.#backend = parts.backend
    this.#timers = parts.timers
    this.#unfollowLevel = followLevel(config, logger)
  }

  get name (): string {
    return this.config.get('node.name')
  }

  /** Forgets a connected client's cached ACL answers for one topic, or all; false when it is not connected here. */
  cleanAclCache (clientId: string, topic?: string): boolean {
    const client = engineClient(this.engine, clientId)
    const state = client === undefined ? undefined : clientState(client)
    if (state === undefined) return false
    this.access.cleanCache(state, topic)
    return true
  }

  static async start ({ config, logger, root, pluginDirs = [] }: NodeOptions): Promise<BrokerNode> {
    assertEnginePatched(root)
    const dataDir = resolvePath(root, config.get('node.data_dir'))
    const lifecycle = new NodeLifecycle()
    const backend = await openBackend(config, dataDir)
    const { db, persistence } = backend
    let engine: Aedes | undefined
    let banned: BannedList | undefined
    let timers: SessionTimers | undefined
    let plugins: PluginHost | undefined
    let clustering: Clustering | undefined
    let observability: Observability | undefined
    try {
      const storeIndex = backend.storedClients !== undefined ? storedClientsIndex(backend.storedClients) : await indexStore(db, persistence)
      coalesceSubscriptionWrites(persistence)
      const retainer = new Retainer(config)
      await retainer.attach(persistence)
      const queues = new SessionQueues(config,
        (clientId) => engine !== undefined && engineClient(engine, clientId)?.closed === false,
        (clientId, packet) => engine?.emit('messageDropped', packet, { id: clientId }, 'queue_full'))
      await queues.attach(db, persistence, { exact: !backend.shared })
      banned = new BannedList(backend.stores('banned'))
      await banned.open()

      // the plugin host gives the registry its chain order when it boots
      const hooks = new HookRegistry(logger)
      const access = new AccessControl(config, hooks, root, logger)
      await access.reload()
      const callbacks = createCallbacks({ config, access, hooks })
      const enhanced = new EnhancedAuth(hooks, logger)
      const guard = new SessionGuard(config, access, backend.stores('session_owners'), async (clientId) => (await persistence.subscriptionsByClient({ id: clientId })).length > 0)
      const authenticate = createAuthenticate({ config, hooks, banned, enhanced, guard, logger })
      observability = new Observability(config, logger)
      const shared = new SharedSubscriptions(config)
      const ownership = backend.redis === undefined ? undefined : new TimerOwnership(backend.redis, config.get('cluster.name'), config.get('node.name'))
      timers = new SessionTimers(backend.stores('timers'), backend.wipeQueue, logger, ownership)
      engine = await createEngine({ config, persistence, mq: backend.mq, shared, enhanced, timers, callbacks: { ...callbacks, authenticate, ...observability.engineCallbacks } })
      await timers.restore(engine, persistence as unknown as Parameters<SessionTimers['restore']>[1], (clientId) => queues.forget(clientId))
      const restored = timers
      logEngineEvents(engine, logger)
      mapEngineEvents(engine, hooks)

      const running = engine
      // the service is given to the plugins, and the listeners open after the plugins boot: both are read late
      const late: { plugins?: PluginHost, listeners: Listener[] } = { listeners: [] }
      const drain = new Drain({ engine, lifecycle, listeners: () => late.listeners, logger, serverReference: () => clustering?.serverReference() })
      const service = createNodeOperations({ config, engine, access, banned, queues, observability, storeIndex, persistence, plugins: () => late.plugins, listeners: () => late.listeners, lifecycle, storeAvailable: backend.available, drain, restoredExpiryInterval: (clientId) => restored.restoredExpiryInterval(clientId) })
      const tracer = new Tracer(engine, logger)
      clustering = await joinCluster({ config, backend, service, shared, engineId: engine.id, logger })
      service.cluster = clustering.cluster
      // mqtt.acl_file is live: the rules are read again when it changes (a bad file keeps the rules in force)
      config.on('change', (key: string) => {
        if (key === 'mqtt.acl_file') service.reloadAcl().catch((err: Error) => logger.error({ err }, 'acl file not reloaded'))
      })
      observability.nodeNames = clustering.liveNodes
      const observed = observability
      clustering.onMembersChanged(() => observed.sysTopics.brokers())
      const sessionTimers = timers
      clustering.onNodeLeft((left) => {
        sessionTimers.adoptFrom(left).catch((err: Error) => logger.error({ err, node: left }, 'timers of a node that left not taken over'))
      })
      const commands = new CommandRegistry()
      for (const command of [...nodeCommands({ service, tracer }), helpCommand(commands)]) commands.add(command)
      plugins = new PluginHost({
        pluginDirs: [join(root, import.meta.url.endsWith('.ts') ? 'plugins' : 'dist/plugins'), ...pluginDirs],
        etcDir: resolvePath(root, config.get('plugins.etc_dir')),
        loadedFile: join(dataDir, 'loaded_plugins'),
        root,
        hooks,
        commands,
        logger,
        node: service,
        publish: async (message) => await publish(running, message),
        store: (plugin) => pluginStore(backend.stores, plugin),
        alarms: observability.alarms
      })
      late.plugins = plugins
      await plugins.boot()

      const listeners = await createListeners(config, root, (stream, req) => running.handle(stream, req))
      late.listeners = listeners
      observability.attach({ engine, listeners, retainer, queues, hooks, shared, restoredSessions: () => restored.restoredSessions() })
      const node = new BrokerNode(config, logger, { engine, listeners, retainer, queues, shared, hooks, access, banned, plugins, observability, db, persistence, backend, timers, storeIndex, tracer, commands, clustering, lifecycle, service })
      try {
        for (const listener of listeners) {
          await listener.start()
          logger.info({ listener: listener.protocol, address: `${listener.address.host}:${listener.address.port}` }, 'listener started')
        }
      } catch (err) {
        await node.stop()
        throw err
      }
      await clustering.announce(listeners.find((l) => l.protocol === 'mqtt:tcp')?.address.port)
      await node.#openControl(controlSocketPath(dataDir))
      lifecycle.set('running')
      logger.info({ node: node.name, dataDir }, 'broker node is running')
      return node
    } catch (err) {
      if (engine !== undefined && !engine.closed) await closeEngine(engine)
      // a failure after the plugins booted (e.g. a listener's certificate) must not leave them running
      await plugins?.stopAll()
      await clustering?.leave()
      observability?.stop()
      await timers?.stop()
      banned?.close()
      if (db.status === 'open') await persistence.destroy()
      await backend.close()
      throw err
    }
  }

  /** Stops accepting, disconnects clients (v5: DISCONNECT 0x8B), unloads plugins, then closes the store. */
  async stop (): Promise<void> {
    this.#stopping ??= this.#stop()
    return await this.#stopping
  }

  /** The broker_ctl socket; a node that cannot open it runs on without broker_ctl (and says why). */
  async #openControl (path: string): Promise<void> {
    try {
      this.#control = await ControlServer.start(path, this.commands, this.logger)
    } catch (err) {
      this.logger.error({ err: (err as Error).message, path }, 'broker_ctl control socket not opened; broker_ctl cannot reach this node')
    }
  }

  async #stop (): Promise<void> {
    this.lifecycle.set('stopping')
    await this.#control?.stop()
    await this.#clustering.leave()
    await this.tracer.stopAll()
    const closing = this.listeners.map(async (listener) => await listener.stop())
    await closeEngine(this.engine)
    await Promise.all(closing)
    await this.#timers.stop()
    await this.plugins.stopAll()
    this.observability.stop()
    this.#unfollowLevel()
    this.banned.close()
    if (this.#db.status === 'open') await this.#persistence.destroy()
    await this.#backend.close()
    this.lifecycle.set('stopped')
    this.logger.info({ node: this.name }, 'broker node stopped')
  }
}

async function publish (engine: Aedes, { topic, payload, qos = 0, retain = false }: PublishRequest): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    engine.publish({ cmd: 'publish', topic, payload: Buffer.from(payload), qos, retain, dup: false }, (err?: Error | null) => err ? reject(err) : resolve())
  })
}

async function closeEngine (engine: Aedes): Promise<void> {
  await new Promise<void>((resolve) => engine.close(() => resolve()))
}

function resolvePath (root: string, path: string): string {
  return isAbsolute(path) ? path : resolve(root, path)
}

function logEngineEvents (engine: Aedes, logger: Logger): void {
  engine.on('clientReady', (client: Client) => logger.debug({ clientId: client.id, version: client.version }, 'client connected'))
  engine.on('clientDisconnect', (client: Client) => logger.debug({ clientId: client.id }, 'client disconnected'))
  const refused = refusedPacketLog(logger)
  engine.on('clientError', refused)
  engine.on('connectionError', refused)
  const events: NodeJS.EventEmitter = engine
  events.on('error', (err: Error) => logger.error({ err }, 'engine error'))
}
