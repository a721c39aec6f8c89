// A plugin context for unit tests of a plugin's handlers without a node: it
// records the hooks, commands, routes and alarms a plugin adds, keeps its
// store in memory, and `unload()` releases the load as the host does
// (newest first). For tests against a real node, see harness.ts.
import { createLogger } from '../log.js'
import { INSTALL_ROOT } from '../root.js'
import type { ClientInfo } from '../hooks/types.js'
import type { CtlCommand } from '../ctl/command.js'
import { Releases } from '../plugins/releases.js'
import { pluginTimers } from '../plugins/context.js'
import { PluginCounters } from '../metrics/plugin-counters.js'
import type { HookHandlers, HookName } from '../hooks/types.js'
import type { BrokerActions, NodeQueries, PluginAlarm, PluginContext, PluginRoute, PluginStore, PublishRequest } from './contract.js'

export interface FakeContext<C> extends PluginContext<C> {
  /** handlers added and not released, by hook name, in the order added */
  added: Map<HookName, Array<HookHandlers[HookName]>>
  published: PublishRequest[]
  /** broker_ctl commands added, by name */
  commands: PluginContext<C>['commands'] & { added: Map<string, CtlCommand> }
  /** routes added, as `METHOD path` */
  routes: PluginContext<C>['routes'] & { added: Map<string, PluginRoute> }
  /** counters the load added, with `values()` (key → value) */
  metrics: PluginContext<C>['metrics'] & { values: () => Record<string, number> }
  /** alarms raised and not cleared, by id */
  raised: Map<string, PluginAlarm>
  /** the first handler the plugin added for `hook` */
  handler: <H extends HookName>(hook: H) => HookHandlers[H]
  /** what the load offered through `provide` (typed by the test), while loaded */
  provided: <T>() => T
  /** what the load registered and has not released */
  registrations: () => number
  /** releases the load as the host does: everything registered, newest first */
  unload: () => Promise<void>
}

export function memoryStore (): PluginStore {
  const map = new Map<string, string>()
  return {
    get: async (key) => map.get(key),
    put: async (key, value) => { map.set(key, value) },
    del: async (key) => { map.delete(key) },
    async * entries () { yield * [...map.entries()].sort(([a], [b]) => a.localeCompare(b)) },
    size: async () => map.size
  }
}

function notInUnitTest (what: string): never {
  throw new Error(`${what} is not available in a fake context: test it against a node (harness.ts)`)
}

export function fakeContext<C> (name: string, config: C, clients: ClientInfo[] = []): FakeContext<C> {
  const logger = createLogger('error', false)
  const releases = new Releases()
  const added = new Map<HookName, Array<HookHandlers[HookName]>>()
  const published: PublishRequest[] = []
  const raised = new Map<string, PluginAlarm>()
  const commands = new Map<string, CtlCommand>()
  const routes = new Map<string, PluginRoute>()
  const counters = new PluginCounters()
  let api: object | undefined
  // the client lookups only: unit tests of hook handlers need no more of the node
  const node = {
    name: 'test@127.0.0.1',
    client: (id: string) => clients.find((c) => c.clientId === id),
    clients: () => clients,
    setting: () => undefined,
    watch: () => {}
  } as unknown as NodeQueries
  const ctx: FakeContext<C> = {
    name,
    config,
    logger,
    root: INSTALL_ROOT,
    store: memoryStore(),
    hooks: {
      add (hook, handler) {
        const entry = handler as HookHandlers[HookName]
        added.set(hook, [...added.get(hook) ?? [], entry])
        releases.push(`hook ${hook}`, () => { added.set(hook, (added.get(hook) ?? []).filter((h) => h !== entry)) })
      }
    },
    routes: {
      add: (route) => {
        const key = `${route.method} ${route.path}`
        routes.set(key, route)
        releases.push(`route ${key}`, () => { routes.delete(key) })
      },
      added: routes
    },
    commands: {
      add: (command) => {
        commands.set(command.name, command)
        releases.push(`command ${command.name}`, () => { commands.delete(command.name) })
      },
      added: commands
    },
    listeners: { add: () => {} },
    metrics: {
      counter: (key, help) => {
        const { counter, release } = counters.claim(name, key, help, new Set())
        releases.push(`metric ${key}`, release)
        return counter
      },
      values: () => counters.values()
    },
    alarms: {
      raise: (alarm) => {
        if (raised.has(alarm.id)) return false
        raised.set(alarm.id, alarm)
        releases.push(`alarm ${alarm.id}`, () => { raised.delete(alarm.id) })
        return true
      },
      clear: (id) => raised.delete(id)
    },
    timers: pluginTimers(releases),
    servers: { add: () => notInUnitTest('servers.add') },
    sockets: { add: () => notInUnitTest('sockets.add') },
    onSettingChange: () => {},
    provide: (offered) => {
      api = offered
      releases.push('api', () => { api = undefined })
    },
    onUnload: (run) => releases.push('onUnload', run),
    node,
    broker: {
      publish: async (message) => { published.push(message) },
      subscribe: async () => notInUnitTest('broker.subscribe'),
      unsubscribe: async () => notInUnitTest('broker.unsubscribe'),
      kick: () => notInUnitTest('broker.kick')
    } satisfies BrokerActions,
    capability: () => notInUnitTest('capability'),
    added,
    published,
    raised,
    handler<H extends HookName> (hook: H): HookHandlers[H] {
      const list = added.get(hook)
      if (!list || list.length === 0) throw new Error(`the plugin added no ${hook} handler`)
      return list[0] as HookHandlers[H]
    },
    provided: <T>() => {
      if (api === undefined) throw new Error(`${name} has provided no API (not loaded?)`)
      return api as T
    },
    registrations: () => releases.size,
    unload: async () => {
      const failed = await releases.unwind(logger)
      if (failed > 0) throw new Error(`${failed} release(s) of ${name} failed`)
    }
  }
  return ctx
}

/** A ClientInfo for tests. */
export function clientInfo (fields: Partial<ClientInfo> = {}): ClientInfo {
  return {
    clientId: 'c1',
    ipAddress: '127.0.0.1',
    port: 50000,
    protocol: 'mqtt:tcp',
    protoVer: 4,
    peercert: 'nossl',
    mountpoint: '',
    isSuperuser: false,
    ...fields
  }
}
