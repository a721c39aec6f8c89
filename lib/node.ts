// One broker node: opens the store, builds access control, the engine and
// the plugin host, then opens the listeners, each part one step of a
// start/stop stack (lib/lifecycle.ts) that stops them in reverse order.
// Nothing else lives here.
import { join, isAbsolute, resolve } from 'node:path'
import type { Aedes, Client } from 'aedes'
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
import { RetainedMessages } from './engine/retained.js'
import { SessionQueues } from './engine/session-queue.js'
import { SessionTimers } from './engine/session-timers.js'
import { indexStore, storedClientsIndex, type StoreIndex } from './engine/store-index.js'
import { coalesceSubscriptionWrites } from './engine/subscription-writes.js'
import { SharedSubscriptions } from './engine/shared-subscriptions.js'
import { openBackend, type Backend } from './engine/backend.js'
import { mapEngineEvents } from './hooks/engine-events.js'
import { HookRegistry } from './hooks/registry.js'
import { createListeners, type Listener } from './listeners/index.js'
import { followLevel, type Logger } from './log.js'
import { once, StartStopStack } from './lifecycle.js'
import { PluginHost } from './plugins/host.js'
import { pluginStore } from './plugins/plugin-store.js'
import { refusedPacketLog } from './refused-packets.js'
import { warnAnonymousListeners } from './start-warnings.js'
import { createNodeOperations, type NodeOperations } from './service/operations.js'
import { publishAsNode } from './service/broker-actions.js'
import { Drain } from './service/drain.js'
import { NodeLifecycle } from './node-state.js'
import { Observability } from './sys/observability.js'
import { CommandRegistry, helpCommand } from './ctl/registry.js'
import { nodeCommands } from './ctl/node-commands.js'
import { controlSocketPath } from './ctl/protocol.js'
import { ControlServer } from './ctl/server.js'
import { Tracer } from './trace/tracer.js'
import { joinCluster, type Clustering } from './cluster/join.js'
import { watchRedis } from './cluster/redis-alarm.js'
import { TimerOwnership } from './cluster/timer-ownership.js'
import { collectStartupGarbage } from './startup-garbage.js'

export interface NodeOptions {
  config: Config
  logger: Logger
  /** the install root that relative paths in the configuration are resolved against */
  root: string
  /** more folders holding broker_* plugins, searched after the install's own */
  pluginDirs?: string[]
  /** a plugin whose settings are refused at boot is logged and skipped instead of stopping the start (`--lenient-plugins`) */
  lenientPlugins?: boolean
  /** aborted (a signal during start-up): the start stops at its next step and unwinds what started */
  signal?: AbortSignal
  /** one full GC of the start-up garbage before the listeners open (`bin/broker`; not in-process test nodes, which start many) */
  collectStartupGarbage?: boolean
}

interface Parts {
  engine: Aedes
  listeners: Listener[]
  retained: RetainedMessages
  queues: SessionQueues
  shared: SharedSubscriptions
  hooks: HookRegistry
  access: AccessControl
  banned: BannedList
  plugins: PluginHost
  observability: Observability
  storeIndex: StoreIndex
  tracer: Tracer
  commands: CommandRegistry
  lifecycle: NodeLifecycle
  service: NodeOperations
}

export class BrokerNode {
  readonly startedAt = new Date()
  readonly engine: Aedes
  readonly listeners: Listener[]
  /** the clients' retained messages go to the plugin keeping them (broker_retainer); the node's `$SYS/` ones stay in the engine's store */
  readonly retained: RetainedMessages
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
  /** what the API, broker_ctl and other nodes call (the node service) */
  readonly service: NodeOperations
  /** starting → running → draining → stopping → stopped; what /status and the drain read */
  readonly lifecycle: NodeLifecycle
  /** the started parts' stops (lib/lifecycle.ts) */
  readonly #started: StartStopStack
  #stopping: Promise<void> | null = null

  private constructor (readonly config: Config, readonly logger: Logger, readonly root: string, parts: Parts, started: StartStopStack) {
    this.engine = parts.engine
    this.listeners = parts.listeners
    this.retained = parts.retained
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
    this.service = parts.service
    this.lifecycle = parts.lifecycle
    this.#started = started
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

  /**
   * Starts the parts in order (docs/architecture.md, "Node lifecycle"); each
   * pushes its stop, and `stop()` (or a part that fails to start) unwinds them
   * in reverse.
   */
  static async start ({ config, logger, root, pluginDirs = [], lenientPlugins = false, signal, collectStartupGarbage: collectGarbage = false }: NodeOptions): Promise<BrokerNode> {
    assertEnginePatched(root)
    const dataDir = resolvePath(root, config.get('node.data_dir'))
    const lifecycle = new NodeLifecycle()
    const stack = new StartStopStack(logger)
    signal?.throwIfAborted()
    const abort = (): void => { void stack.stop() }
    signal?.addEventListener('abort', abort, { once: true })
    const parts = await stack.start(async (step): Promise<Parts> => {
      await step('log level', () => followLevel(config, logger), (unfollow) => unfollow())
      const backend = await step('store', async () => await openBackend(config, dataDir), closeStore)
      const { db, persistence } = backend
      const storeIndex = await step('store index', async () => backend.storedClients !== undefined ? storedClientsIndex(backend.storedClients) : await indexStore(db, persistence))
      coalesceSubscriptionWrites(persistence)
      const retained = await step('retained messages', () => {
        const retained = new RetainedMessages(persistence, backend.shared, logger)
        retained.attach()
        return retained
      })
      // the queues wrap the store the engine is built on, so they read the engine late
      let built: Aedes | undefined = undefined
      const queues = await step('session queues', async () => {
        const queues = new SessionQueues(config,
          (clientId) => built !== undefined && engineClient(built, clientId)?.closed === false,
          (clientId, packet) => built?.emit('messageDropped', packet, { id: clientId }, 'queue_full'))
        await queues.attach(db, persistence, { exact: !backend.shared })
        return queues
      })
      const banned = await step('banned list', async () => {
        const banned = new BannedList(backend.stores('banned'))
        await banned.open()
        return banned
      }, (banned) => banned.close())

      // the plugin host gives the registry its chain order when it boots
      const hooks = new HookRegistry(logger)
      const access = await step('access control', async () => {
        const access = new AccessControl(config, hooks, root, logger)
        await access.reload()
        return access
      })
      const observability = await step('observability', () => new Observability(config, logger), (observability) => observability.stop())
      const shared = new SharedSubscriptions(config)
      const ownership = backend.redis === undefined ? undefined : new TimerOwnership(backend.redis, config.get('cluster.name'), config.get('node.name'))
      const timers = new SessionTimers(backend.stores('timers'), backend.wipeQueue, logger, ownership)
      // closed by the listening step's stop (below), before the plugins unload; here only when the node fails before it listens
      const engine = await step('engine', async () => {
        const callbacks = createCallbacks({ config, access, hooks })
        const enhanced = new EnhancedAuth(hooks, logger)
        const guard = new SessionGuard(config, access, backend.stores('session_owners'), async (clientId) => (await persistence.subscriptionsByClient({ id: clientId })).length > 0)
        const authenticate = createAuthenticate({ config, hooks, banned, enhanced, guard, logger })
        // a QoS 0 message the bus kept off Redis (cluster.bus.overflow = drop_qos0) is a dropped message
        if (backend.mq !== undefined) backend.mq.onDrop = () => observability.metrics.dropped(0)
        const engine = await createEngine({ config, persistence, mq: backend.mq, shared, enhanced, timers, callbacks: { ...callbacks, authenticate, ...observability.engineCallbacks } })
        logEngineEvents(engine, logger)
        mapEngineEvents(engine, hooks)
        return engine
      }, closeEngine)
      built = engine
      await step('session timers', async () => {
        await timers.restore(engine, persistence as unknown as Parameters<SessionTimers['restore']>[1], (clientId) => queues.forget(clientId))
      }, async () => await timers.stop())
      // made here, opened by the listening step: the service and the drain list them
      const listeners = await step('listeners', async () => await createListeners(config, root, (stream, req) => engine.handle(stream, req)))

      // the plugin host is given the service and the cluster serves it: the service reads the host late, and is told its cluster once joined
      let plugins: PluginHost | undefined = undefined
      let clustering: Clustering | undefined = undefined
      const service = await step('node service', () => {
        const drain = new Drain({ engine, lifecycle, listeners: () => listeners, logger, serverReference: async () => await clustering?.serverReference() })
        return createNodeOperations({ config, engine, hooks, access, banned, queues, observability, storeIndex, persistence, plugins: () => plugins, listeners: () => listeners, lifecycle, storeAvailable: backend.available, drain, restoredExpiryInterval: (clientId) => timers.restoredExpiryInterval(clientId) })
      })
      // mqtt.acl_file is live: the rules are read again when it changes (a bad file keeps the rules in force)
      await step('acl file watch', () => {
        const onChange = (key: string): void => {
          if (key === 'mqtt.acl_file') service.reloadAcl().catch((err: Error) => logger.error({ err }, 'acl file not reloaded'))
        }
        config.on('change', onChange)
        return onChange
      }, (onChange) => config.off('change', onChange))
      // its RPC answers from here; it leaves when the node stops accepting (the announce step), or here when the node never got that far
      const cluster = await step('cluster', async () => {
        const joined = await joinCluster({ config, backend, service, shared, engineId: engine.id, logger })
        return { ...joined, leave: once(joined.leave) }
      }, async (cluster) => await cluster.leave())
      clustering = cluster
      service.cluster = cluster.cluster
      const storeRedis = backend.redis
      if (storeRedis !== undefined) {
        await step('redis alarm', () => watchRedis(storeRedis, observability.alarms, config.get('cluster.bus.window')), (unwatch) => unwatch())
      }
      observability.nodeNames = cluster.liveNodes
      cluster.onMembersChanged(() => observability.sysTopics.brokers())
      cluster.onNodeLeft((left) => {
        timers.adoptFrom(left).catch((err: Error) => logger.error({ err, node: left }, 'timers of a node that left not taken over'))
      })

      const tracer = new Tracer(engine, logger)
      const commands = new CommandRegistry()
      for (const command of [...nodeCommands({ service, tracer }), helpCommand(commands)]) commands.add(command)
      // the host's stop is pushed before the boot, so plugins that booted before a failing one are unloaded
      const host = await step('plugin host', () => new PluginHost({
        pluginDirs: [join(root, import.meta.url.endsWith('.ts') ? 'plugins' : 'dist/plugins'), ...pluginDirs],
        etcDir: resolvePath(root, config.get('plugins.etc_dir')),
        loadedFile: join(dataDir, 'loaded_plugins'),
        root,
        hooks,
        commands,
        logger,
        config,
        service,
        publish: async (message) => await publishAsNode(engine, hooks, message),
        // a gateway client arriving while the node stops finds the engine closed: it is closed too
        handle: (stream) => { if (engine.closed) stream.destroy(); else engine.handle(stream) },
        store: (plugin) => pluginStore(backend.stores, plugin),
        clusterNodes: cluster.members,
        retained,
        alarms: observability.alarms,
        counters: observability.pluginCounters
      }), async (host) => await host.stopAll())
      plugins = host
      cluster.onNodeDown((left) => host.nodeLeft(left))
      await step('plugins', async () => {
        await host.boot({ lenient: lenientPlugins })
        await retained.warnUnkept()
      })

      // undone by the observability step's stop
      await step('observing', () => observability.attach({ engine, listeners, retained, queues, hooks, shared, restoredSessions: () => timers.restoredSessions() }))
      if (collectGarbage) collectStartupGarbage()
      // its stop disconnects every client (the engine closes) while the plugins are loaded and see them go
      await step('listening', async () => {
        try {
          await listen(listeners, logger)
        } catch (err) {
          await stopServing(listeners, engine)
          throw err
        }
      }, async () => await stopServing(listeners, engine))
      // the traces end before the clients are disconnected; the tracer was made earlier, for the commands
      await step('tracing', () => tracer, async (tracer) => await tracer.stopAll())
      await step('cluster announce', async () => await cluster.announce(listeners.find((l) => l.id === 'mqtt:tcp:external')?.address.port), async () => await cluster.leave())
      await step('control socket', async () => await openControl(controlSocketPath(dataDir), commands, logger), async (control) => await control?.stop())
      return { engine, listeners, retained, queues, shared, hooks, access, banned, plugins: host, observability, storeIndex, tracer, commands, lifecycle, service }
    })
    signal?.removeEventListener('abort', abort)
    // aborted after the last step started: the stack is unwinding; the node never ran
    if (signal?.aborted === true) {
      await stack.stop()
      throw new Error('stopped while starting (after the last step)')
    }
    const node = new BrokerNode(config, logger, root, parts, stack)
    lifecycle.set('running')
    warnAnonymousListeners(logger, config.get('mqtt.allow_anonymous'), parts.listeners)
    logger.info({ node: node.name, dataDir }, 'broker node is running')
    return node
  }

  /** Closes broker_ctl, leaves the cluster, stops accepting, disconnects clients (v5: DISCONNECT 0x8B), unloads plugins, then closes the store. */
  async stop (): Promise<void> {
    this.#stopping ??= this.#stop()
    return await this.#stopping
  }

  async #stop (): Promise<void> {
    this.lifecycle.set('stopping')
    await this.#started.stop()
    this.lifecycle.set('stopped')
    this.logger.info({ node: this.name }, 'broker node stopped')
  }
}

/** The broker_ctl socket; a node that cannot open it runs on without broker_ctl (and says why). */
async function openControl (path: string, commands: CommandRegistry, logger: Logger): Promise<ControlServer | undefined> {
  try {
    return await ControlServer.start(path, commands, logger)
  } catch (err) {
    logger.error({ err: (err as Error).message, path }, 'broker_ctl control socket not opened; broker_ctl cannot reach this node')
    return undefined
  }
}

async function listen (listeners: Listener[], logger: Logger): Promise<void> {
  for (const listener of listeners) {
    await listener.start()
    logger.info({ listener: listener.id, address: `${listener.address.host}:${listener.address.port}` }, 'listener started')
  }
}

/** Stops accepting, then closes the engine (disconnecting the clients); a listener has closed once its connections are gone. */
async function stopServing (listeners: Listener[], engine: Aedes): Promise<void> {
  const closing = listeners.map(async (listener) => await listener.stop())
  await closeEngine(engine)
  await Promise.all(closing)
}

async function closeStore (backend: Backend): Promise<void> {
  if (backend.db.status === 'open') await backend.persistence.destroy()
  await backend.close()
}

async function closeEngine (engine: Aedes): Promise<void> {
  if (engine.closed) return
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
