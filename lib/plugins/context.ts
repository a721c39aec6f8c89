// Builds the context one plugin load is given. Everything registered through
// it pushes its release onto that load's stack (releases.ts), so the host can
// take the whole load back, newest first, when the plugin unloads.
import type { Socket as NetSocket } from 'node:net'
import type { Socket as UdpSocket } from 'node:dgram'
import type { Duplex } from 'node:stream'
import type { HookRegistry } from '../hooks/registry.js'
import type { CommandRegistry } from '../ctl/registry.js'
import type { Config } from '../config/store.js'
import { followingChild, type Logger } from '../log.js'
import { actionsOf, queriesOf, type ListenerRecord, type NodeOperations } from '../service/operations.js'
import { configItemKeys, liveKeys, type BrokerActions, type BrokerPlugin, type CapabilityName, type Capabilities, type NodeQueries, type PluginAlarm, type PluginCode, type PluginContext, type PluginServer, type PluginSocket, type PluginStore, type PublishRequest } from '../plugin-kit/contract.js'
import type { RetainedMessages } from '../engine/retained.js'
import type { PluginRoutes } from './plugin-routes.js'
import { Releases } from './releases.js'
import { gatewayLinks } from './gateway-links.js'
import { METRIC_KEYS } from '../metrics/metrics.js'
import type { PluginCounters } from '../metrics/plugin-counters.js'

const RESERVED_METRICS: ReadonlySet<string> = new Set([...METRIC_KEYS, 'packets/disconnect'])

/** What the host shares with every load. */
export interface ContextDeps {
  hooks: HookRegistry
  commands: CommandRegistry
  routes: PluginRoutes
  /** the listeners plugins serve (SPEC §2.10), read at each listing */
  listeners: Set<() => ListenerRecord>
  alarms: { raise: (alarm: PluginAlarm) => boolean, clear: (id: string) => boolean }
  /** the counters plugins add to the node's metrics */
  counters: PluginCounters
  /** the node's settings */
  config: Config
  service: NodeOperations
  publish: (message: PublishRequest) => Promise<void>
  /** hands a gateway client's in-process MQTT stream to the engine (as a listener does a socket) */
  handle: (stream: Duplex) => void
  store: (plugin: string) => PluginStore
  cluster: ClusterDeps
  /** the slot of the `retained` capability */
  retained: Pick<RetainedMessages, 'slot'>
  logger: Logger
  root: string
  /** what the `plugin_code` capability grants */
  pluginCode: PluginCode
  /** what a loaded plugin offered through `ctx.provide` (the `administration` capability hands it out) */
  provided: <T extends object>(plugin: string) => T | undefined
}

/** The cluster as the host shares it with the loads: the live nodes now, and who to tell when a node leaves. */
export interface ClusterDeps {
  nodes: () => Promise<string[]>
  /** the loads' `onNodeLeft` handlers, each removed at its load's unload */
  nodeLeft: Set<(node: string) => void>
}

/** What each capability hands a plugin whose manifest names it. */
const GRANTS: { readonly [N in CapabilityName]: (deps: ContextDeps, plugin: string, releases: Releases) => Capabilities[N] } = Object.freeze({
  administration: (deps: ContextDeps) => ({ node: deps.service, pluginRoutes: deps.routes, provided: deps.provided }),
  plugin_code: (deps: ContextDeps) => deps.pluginCode,
  retained: (deps: ContextDeps, plugin: string, releases: Releases) => deps.retained.slot(plugin, (release) => releases.push('retained messages', release))
})

/** One load of one plugin: its context, its releases, and its live settings' watchers. */
export class PluginLoad<C> {
  readonly releases = new Releases()
  readonly context: PluginContext<C>
  readonly #settingWatchers = new Map<string, Array<(value: unknown) => void>>()
  /** what the load offered through `ctx.provide` */
  api: object | undefined
  #config: C

  readonly #live: Set<string>
  /** its keys shown by the node's configuration API, with their datatypes */
  readonly configItems: Map<string, string>

  constructor (plugin: BrokerPlugin<C>, config: C, deps: ContextDeps) {
    this.#config = config
    this.#live = liveKeys(plugin.schema)
    this.configItems = configItemKeys(plugin.schema)
    this.context = this.#build(plugin, deps)
  }

  get config (): C {
    return this.#config
  }

  /** Whether every changed key is live (schema `.meta({ live: true })`); then `applyLive` changes them without a reload. */
  canApplyLive (changed: string[]): boolean {
    return changed.length > 0 && changed.every((key) => this.#live.has(key))
  }

  /** Takes the new settings in place and tells each changed key's watchers. */
  applyLive (config: C, changed: string[]): void {
    this.#config = config
    for (const key of changed) {
      for (const run of this.#settingWatchers.get(key) ?? []) run((config as Record<string, unknown>)[key])
    }
  }

  #build (plugin: BrokerPlugin<C>, deps: ContextDeps): PluginContext<C> {
    const { name } = plugin
    const releases = this.releases
    const { logger, release: unfollow } = followingChild(deps.logger, { plugin: name })
    releases.push('logger', unfollow)
    const granted = new Set<CapabilityName>(plugin.capabilities ?? [])
    const current = (): C => this.#config
    return {
      name,
      get config () { return current() },
      logger,
      root: deps.root,
      store: deps.store(name),
      hooks: { add: (hook, handler, priority) => releases.push(`hook ${hook}`, deps.hooks.add(hook, handler, name, priority)) },
      routes: { add: (route) => releases.push(`route ${route.method} ${route.path}`, deps.routes.add(name, route)) },
      commands: { add: (command) => releases.push(`command ${command.name}`, deps.commands.add(command, name)) },
      listeners: {
        add: (report) => {
          const entry = (): ListenerRecord => report()
          deps.listeners.add(entry)
          releases.push('listener', () => { deps.listeners.delete(entry) })
        }
      },
      gateway: gatewayLinks(releases, deps.handle),
      metrics: {
        counter: (key, help) => {
          const { counter, release } = deps.counters.claim(name, key, help, RESERVED_METRICS)
          releases.push(`metric ${key}`, release)
          return counter
        }
      },
      alarms: alarms(deps, releases),
      timers: pluginTimers(releases),
      servers: { add: (server) => trackServer(releases, server) },
      sockets: { add: (socket) => track(releases, 'socket', socket, destroySocket) },
      onSettingChange: (key, run) => {
        if (!this.#live.has(key)) throw new Error(`${name}: ${key} is not a live setting (mark it .meta({ live: true }) in the schema)`)
        this.#settingWatchers.set(key, [...this.#settingWatchers.get(key) ?? [], run as (value: unknown) => void])
      },
      provide: (api) => {
        this.api = api
        releases.push('api', () => { this.api = undefined })
      },
      onUnload: (run) => releases.push('onUnload', run),
      node: nodeQueries(deps, releases),
      broker: brokerActions(deps),
      cluster: {
        nodes: deps.cluster.nodes,
        onNodeLeft: (run) => {
          const entry = (node: string): void => { run(node) }
          deps.cluster.nodeLeft.add(entry)
          releases.push('cluster onNodeLeft', () => { deps.cluster.nodeLeft.delete(entry) })
        }
      },
      capability: <N extends CapabilityName>(capability: N): Capabilities[N] => {
        if (!granted.has(capability)) throw new Error(`plugin ${name} is not granted ${capability}: name it in the plugin's capabilities`)
        return GRANTS[capability](deps, name, releases)
      }
    }
  }
}

/** The read-only view, and `watch` for the node's settings, released with the load. */
function nodeQueries (deps: ContextDeps, releases: Releases): NodeQueries {
  const queries = queriesOf(deps.service)
  return Object.assign(queries, {
    watch: (key: string, onChange: (value: unknown) => void) => {
      // a watcher's failure (or a secret key, which setting() refuses) must not fail the change itself
      const listener = (changed: string): void => {
        if (changed !== key) return
        try {
          onChange(queries.setting(key as never))
        } catch (err) {
          deps.logger.error({ err, key }, 'a plugin setting watcher failed')
        }
      }
      deps.config.on('change', listener)
      releases.push(`watch ${key}`, () => { deps.config.off('change', listener) })
    }
  })
}

function brokerActions (deps: ContextDeps): BrokerActions {
  return { ...actionsOf(deps.service), publish: deps.publish }
}

/** Alarms cleared at unload: one release for all of them, so an alarm raised and cleared again and again adds nothing. */
function alarms (deps: ContextDeps, releases: Releases): PluginContext<unknown>['alarms'] {
  const raised = new Set<string>()
  releases.push('alarms', () => {
    for (const id of raised) deps.alarms.clear(id)
    raised.clear()
  })
  return {
    raise: (alarm) => {
      const fresh = deps.alarms.raise(alarm)
      if (fresh) raised.add(alarm.id)
      return fresh
    },
    clear: (id) => {
      raised.delete(id)
      return deps.alarms.clear(id)
    }
  }
}

/** Timers cleared at unload; a timeout that fired is forgotten. */
export function pluginTimers (releases: Releases): PluginContext<unknown>['timers'] {
  const live = new Set<NodeJS.Timeout>()
  releases.push('timers', () => {
    for (const timer of live) clearTimeout(timer)
    live.clear()
  })
  const cancel = (timer: NodeJS.Timeout) => () => {
    clearTimeout(timer)
    live.delete(timer)
  }
  return {
    setTimeout: (run, ms) => {
      const timer: NodeJS.Timeout = setTimeout(() => {
        live.delete(timer)
        run()
      }, ms)
      live.add(timer)
      return { cancel: cancel(timer) }
    },
    setInterval: (run, ms) => {
      const timer = setInterval(run, ms)
      live.add(timer)
      return { cancel: cancel(timer) }
    }
  }
}

function track<T> (releases: Releases, what: string, thing: T, close: (thing: T) => Promise<void>): T {
  releases.push(what, async () => { await close(thing) })
  return thing
}

/** A server the load opened: closed at unload with every connection it still has (a close waits for them otherwise). */
function trackServer<S extends PluginServer> (releases: Releases, server: S): S {
  if (isUdp(server)) return track(releases, 'udp socket', server, destroySocket)
  const open = new Set<NetSocket>()
  server.on('connection', (socket: NetSocket) => {
    open.add(socket)
    socket.once('close', () => open.delete(socket))
  })
  releases.push('server', async () => {
    await new Promise<void>((resolve) => {
      server.close(() => resolve())
      for (const socket of open) socket.destroy()
    })
  })
  return server
}

async function destroySocket (socket: PluginSocket): Promise<void> {
  if (isUdp(socket)) {
    await new Promise<void>((resolve) => {
      try {
        socket.close(() => resolve())
      } catch {
        resolve() // closed already
      }
    })
    return
  }
  if (!socket.destroyed) socket.destroy()
}

function isUdp (thing: PluginServer | PluginSocket): thing is UdpSocket {
  return typeof (thing as UdpSocket).send === 'function' && typeof (thing as UdpSocket).setBroadcast === 'function'
}
