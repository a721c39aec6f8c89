// A plugin context for unit tests of a plugin's handlers without a node:
// it records the hooks a plugin adds and keeps its store in memory.
import type { CtlCommand, HookHandlers, HookName, NodeView, PluginAlarm, PluginContext, PluginStore, PublishRequest } from '../../lib/plugins/contract.js'
import type { ClientInfo } from '../../lib/hooks/types.js'
import { createLogger } from '../../lib/log.js'
import { INSTALL_ROOT } from '../../lib/root.js'

export interface FakeContext<C> extends PluginContext<C> {
  /** handlers added, by hook name, in the order added */
  added: Map<HookName, Array<HookHandlers[HookName]>>
  published: PublishRequest[]
  /** broker_ctl commands added, by name */
  commands: PluginContext<C>['commands'] & { added: Map<string, CtlCommand> }
  /** alarms raised and not cleared, by id */
  raised: Map<string, PluginAlarm>
  /** the first handler the plugin added for `hook` */
  handler: <H extends HookName>(hook: H) => HookHandlers[H]
}

export function memoryStore (): PluginStore {
  const map = new Map<string, string>()
  return {
    get: async (key) => map.get(key),
    put: async (key, value) => { map.set(key, value) },
    del: async (key) => { map.delete(key) },
    async * entries () { yield * [...map.entries()].sort(([a], [b]) => a.localeCompare(b)) }
  }
}

export function fakeContext<C> (name: string, config: C, clients: ClientInfo[] = []): FakeContext<C> {
  const added = new Map<HookName, Array<HookHandlers[HookName]>>()
  const published: PublishRequest[] = []
  const raised = new Map<string, PluginAlarm>()
  const commands = new Map<string, CtlCommand>()
  // only the name and the client lookup: unit tests of hook handlers need no more of the node service
  const node = { name: 'test@127.0.0.1', client: (id: string) => clients.find((c) => c.clientId === id) } as unknown as NodeView
  return {
    name,
    config,
    logger: createLogger('error', false),
    hooks: {
      add (hook, handler) {
        const list = added.get(hook) ?? []
        list.push(handler as HookHandlers[HookName])
        added.set(hook, list)
      }
    },
    publish: async (message) => { published.push(message) },
    commands: { add: (command) => { commands.set(command.name, command) }, added: commands },
    listeners: { add: () => {} },
    alarms: {
      raise: (alarm) => !raised.has(alarm.id) && raised.set(alarm.id, alarm) !== undefined,
      clear: (id) => raised.delete(id)
    },
    node,
    store: memoryStore(),
    root: INSTALL_ROOT,
    added,
    published,
    raised,
    handler<H extends HookName> (hook: H): HookHandlers[H] {
      const list = added.get(hook)
      if (!list || list.length === 0) throw new Error(`the plugin added no ${hook} handler`)
      return list[0] as HookHandlers[H]
    }
  }
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
