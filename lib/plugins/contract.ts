// The plugin contract: what a plugin module exports and what it receives.
// A plugin is a folder plugins/broker_<name>/ whose index.ts default-exports
// `definePlugin({...})`. Its settings live in etc/plugins/broker_<name>.conf
// (`key = value`, validated by `schema`). The context is the only way a
// plugin reaches the broker; everything it registers there is released
// when it unloads.
import type Joi from 'joi'
import type { HookHandlers, HookName, ClientInfo } from '../hooks/types.js'
import type { Logger } from '../log.js'
import type { ListenerRecord, NodeServiceView } from '../service/node-service.js'
import type { CtlCommand } from '../ctl/command.js'

export type { ClientInfo, HookHandlers, HookName } from '../hooks/types.js'
export type { CtlCommand, CtlOutput, UsageLine } from '../ctl/command.js'
export { CtlError, output, usageError } from '../ctl/command.js'
export type { AuthenticateAnswer, AuthenticateRequest, CheckAclRequest, Decision, EnhancedAuthAnswer, EnhancedAuthRequest, MessageInfo } from '../hooks/types.js'

/** Durable key → string storage of one plugin, kept in the node's store. */
export interface PluginStore {
  get: (key: string) => Promise<string | undefined>
  put: (key: string, value: string) => Promise<void>
  del: (key: string) => Promise<void>
  entries: () => AsyncIterable<[string, string]>
}

export interface PublishRequest {
  topic: string
  payload: string | Buffer
  qos?: 0 | 1 | 2
  retain?: boolean
}

/**
 * The node as a plugin sees it: the node service (lib/service/node-service.ts)
 * — records in SPEC's shapes and the operations the management API offers.
 */
export interface NodeView extends NodeServiceView {
  readonly name: string
  /** a connected client, or undefined */
  client: (clientId: string) => ClientInfo | undefined
}

/** An alarm a plugin raises (SPEC §2.18; shown by the API and `$SYS/brokers/<node>/alarms/…`). */
export interface PluginAlarm {
  /** unique per node; the host clears a plugin's alarms when it unloads */
  id: string
  severity: 'notice' | 'warning' | 'error' | 'critical'
  title: string
  summary: string
}

export interface PluginContext<C> {
  readonly name: string
  /** the plugin's settings, validated and converted by its schema */
  readonly config: C
  readonly logger: Logger
  readonly hooks: {
    /** Higher priority runs first; equal priorities run in data/loaded_plugins order. */
    add: <H extends HookName>(hook: H, handler: HookHandlers[H], priority?: number) => void
  }
  publish: (message: PublishRequest) => Promise<void>
  readonly alarms: {
    /** false when it is raised already */
    raise: (alarm: PluginAlarm) => boolean
    /** false when it was not raised */
    clear: (id: string) => boolean
  }
  readonly commands: {
    /** A `broker_ctl` command (e.g. `users`); removed when the plugin unloads. */
    add: (command: CtlCommand) => void
  }
  readonly listeners: {
    /**
     * A listener the plugin serves (the management API, a dashboard), listed with
     * the node's MQTT listeners (SPEC §2.10); `report` is read at each listing.
     * Removed when the plugin unloads.
     */
    add: (report: () => ListenerRecord) => void
  }
  readonly node: NodeView
  readonly store: PluginStore
  /** the install root, for resolving relative file paths in settings */
  readonly root: string
}

/** Closes what one `load` opened. */
export type PluginRelease = () => void | Promise<void>

export interface BrokerPlugin<C = Record<string, unknown>> {
  name: string
  version: string
  description: string
  /** a Joi object over the flat setting keys, e.g. `'auth.http.auth_req'` */
  schema: Joi.ObjectSchema<C>
  /**
   * Starts the plugin. What it opens (servers, pools, timers) it keeps in what
   * this call made, and returns a release function that closes it: the host
   * calls that function when the plugin unloads (never module variables: the
   * module is imported once per process and may serve several loads or nodes).
   */
  load: (ctx: PluginContext<C>) => void | PluginRelease | Promise<void | PluginRelease>
  /** Called after the release function; for what outlives one load (usually nothing). */
  unload: () => void | Promise<void>
  /**
   * What `load` would refuse beyond the schema (a file it reads, a key it
   * parses), checked before settings changed at run time are saved: throws
   * an Error saying why. `root` is the install root relative paths start at.
   */
  check?: (config: C, root: string) => void | Promise<void>
}

/** Types a plugin module's default export. */
export function definePlugin<C> (plugin: BrokerPlugin<C>): BrokerPlugin<C> {
  return plugin
}
