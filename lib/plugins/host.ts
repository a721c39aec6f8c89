// The plugin host: finds plugins in plugins/broker_*/, loads those listed in
// data/loaded_plugins at boot in that (chain) order, and loads or unloads
// them at run time, rewriting that file. A plugin reaches the broker only
// through the context it is given; everything it registered there is
// released when it unloads, or when its load fails.
import { readdir } from 'node:fs/promises'
import type { Duplex } from 'node:stream'
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { CommandRegistry } from '../ctl/registry.js'
import type { Config } from '../config/store.js'
import type { Logger } from '../log.js'
import type { ListenerRecord, NodeOperations } from '../service/operations.js'
import type Joi from 'joi'
import type { BrokerPlugin, PluginAlarm, PluginCode, PluginStore, PublishRequest } from '../plugin-kit/contract.js'
import { HOLDABLE_HOOKS, type HookRegistry } from '../hooks/registry.js'
import type { RetainedMessages } from '../engine/retained.js'
import { PluginLoad } from './context.js'
import { importFailure, importFresh } from './fresh-import.js'
import type { PluginCounters } from '../metrics/plugin-counters.js'
import { PluginRoutes } from './plugin-routes.js'
import { readLoadedList, writeLoadedList } from './loaded-list.js'
import { configItemValue, readPluginConfig, validatePluginConfig } from './plugin-config.js'
import { ConfigError } from '../config/parse.js'

/** Why a plugin operation failed; `code` follows SPEC §3 / §7 (already_started = v2 110, not_started = 111). */
export class PluginError extends Error {
  constructor (readonly code: 'not_found' | 'already_started' | 'not_started' | 'load_failed', message: string, options?: ErrorOptions) {
    super(message, options)
    this.name = 'PluginError'
  }
}

export interface PluginRecord { name: string, version: string, description: string, active: boolean }
/** A plugin whose code was replaced: its new version, and whether it runs (else the new code waits for its next load). */
export interface CodeReplaced { plugin: string, version: string, active: boolean }

/** What re-reading one active plugin's settings did (`failed`: `error` says why). */
export interface SettingsReload { plugin: string, outcome: 'reloaded' | 'live' | 'unchanged' | 'failed', error?: string }

/** A plugin setting the node's configuration API shows (SPEC §2.14): `app` is the plugin; a change applies at once (live, or by a reload). */
export interface PluginConfigItem { key: string, value: string, datatype: string, app: string, kind: 'live' }

export interface PluginHostOptions {
  /** folders holding broker_* plugin folders, searched in order */
  pluginDirs: string[]
  /** where <plugin>.conf files are */
  etcDir: string
  /** data/loaded_plugins */
  loadedFile: string
  root: string
  hooks: HookRegistry
  /** broker_ctl commands */
  commands: CommandRegistry
  logger: Logger
  /** the node's settings, which plugins read and watch */
  config: Config
  /** the node's operations: queries and actions for every plugin, the rest for `administration` */
  service: NodeOperations
  publish: (message: PublishRequest) => Promise<void>
  /** hands a gateway client's in-process MQTT stream to the engine (`ctx.gateway.connect`) */
  handle: (stream: Duplex) => void
  store: (plugin: string) => PluginStore
  /** the live nodes of the cluster, asked now (on a node alone: itself) */
  clusterNodes: () => Promise<string[]>
  /** the retained messages' slot (the `retained` capability) */
  retained: Pick<RetainedMessages, 'slot'>
  /** the node's alarms (observability) */
  alarms: { raise: (alarm: PluginAlarm) => boolean, clear: (id: string) => boolean }
  /** the counters plugins add to the node's metrics (observability) */
  counters: PluginCounters
}

const SOURCE_RUNTIME = import.meta.url.endsWith('.ts')

/** Loaded at boot when data/loaded_plugins does not exist yet. */
export const DEFAULT_PLUGINS = ['broker_management', 'broker_retainer', 'broker_modules', 'broker_dashboard'] as const

export class PluginHost {
  readonly #modules = new Map<string, string>()
  readonly #plugins = new Map<string, BrokerPlugin<unknown>>()
  readonly #namespaces = new Map<string, Record<string, unknown>>()
  /** each active plugin's load: its context and what it registered */
  readonly #loads = new Map<string, PluginLoad<unknown>>()
  /** each plugin's store, opened once: a LevelDB sublevel stays attached to the database until it closes */
  readonly #stores = new Map<string, PluginStore>()
  /** the listeners the loaded plugins serve (SPEC §2.10) */
  readonly #listeners = new Set<() => ListenerRecord>()
  /** the loaded plugins' `ctx.cluster.onNodeLeft` handlers */
  readonly #nodeLeft = new Set<(node: string) => void>()
  /** the HTTP routes the loaded plugins add, served by the management API */
  readonly routes = new PluginRoutes()
  /** chain order: data/loaded_plugins, then plugins loaded at run time */
  #order: string[] = []
  /** load/unload/reload run one at a time */
  #queue: Promise<unknown> = Promise.resolve()
  /** the `plugin_code` capability (broker_reloader) */
  readonly #pluginCode: PluginCode = {
    plugins: async () => await this.list(),
    folder: (name) => this.codeFolder(name),
    reload: async (name, node) => {
      const { service } = this.options
      return node === undefined || node === service.name ? await service.reloadPluginCode(name) : await service.cluster.on(node, 'reloadPluginCode', name)
    }
  }

  constructor (private readonly options: PluginHostOptions) {}

  /**
   * Finds the plugins, then loads the listed ones. A plugin whose settings
   * are refused (its schema, or its `check`) throws the ConfigError
   * (`file:line: key: why`) and the node does not start, as for the node's own
   * settings; `lenient` logs it and goes on instead. A plugin that fails for
   * another reason (its code, a backend it cannot reach) is logged and skipped.
   */
  async boot ({ lenient = false }: { lenient?: boolean } = {}): Promise<void> {
    await this.#discover()
    // a new install (no data/loaded_plugins yet) starts with the management API and the retainer, as EMQ X ships
    this.#order = (await readLoadedList(this.options.loadedFile)) ?? [...DEFAULT_PLUGINS]
    this.options.hooks.reorder((owner) => this.rank(owner))
    for (const name of [...this.#order]) {
      try {
        await this.#bootOne(name)
      } catch (err) {
        if (err instanceof ConfigError && !lenient) throw err
        this.options.logger.error({ plugin: name, err: (err as Error).message }, 'plugin failed to load at boot')
      }
    }
  }

  async #bootOne (name: string): Promise<void> {
    const config = await this.#config(name)
    try {
      await this.check(name, config)
    } catch (err) {
      throw new ConfigError(this.configFile(name), (err as Error).message)
    }
    await this.#start(name, config)
  }

  /** A plugin's place in the chain; the node's own handlers (not a plugin) come after every plugin. */
  rank (owner: string): number {
    const index = this.#order.indexOf(owner)
    return index < 0 ? Number.MAX_SAFE_INTEGER : index
  }

  /** Every plugin found; one whose module cannot be imported is listed with the reason as its description. */
  async list (): Promise<PluginRecord[]> {
    const records: PluginRecord[] = []
    for (const name of [...this.#modules.keys()].sort()) {
      try {
        const plugin = await this.#module(name)
        records.push({ name, version: plugin.version, description: plugin.description, active: this.#loads.has(name) })
      } catch (err) {
        records.push({ name, version: 'unknown', description: `cannot be loaded: ${(err as Error).message}`, active: false })
      }
    }
    return records
  }

  isActive (name: string): boolean {
    return this.#loads.has(name)
  }

  /** Loads at run time and records it in data/loaded_plugins. */
  async load (name: string): Promise<void> {
    await this.#serial(async () => await this.#loadNow(name))
  }

  async #loadNow (name: string): Promise<void> {
    if (!this.#modules.has(name)) throw new PluginError('not_found', `plugin ${name} not found`)
    if (this.#loads.has(name)) throw new PluginError('already_started', 'already_started')
    if (!this.#order.includes(name)) this.#order.push(name)
    this.options.hooks.reorder()
    try {
      await this.#load(name)
    } catch (err) {
      this.#order = this.#order.filter((n) => n !== name || this.#loads.has(n))
      throw err
    }
    await writeLoadedList(this.options.loadedFile, this.#order)
  }

  /** Unloads at run time and removes it from data/loaded_plugins. */
  async unload (name: string): Promise<void> {
    await this.#serial(async () => await this.#unloadNow(name))
  }

  async #unloadNow (name: string): Promise<void> {
    if (!this.#modules.has(name)) throw new PluginError('not_found', `plugin ${name} not found`)
    if (!this.#loads.has(name)) throw new PluginError('not_started', 'not_started')
    await this.#unload(name)
    this.#order = this.#order.filter((n) => n !== name)
    await writeLoadedList(this.options.loadedFile, this.#order)
  }

  /**
   * Re-reads the settings and restarts the plugin, keeping its place in the
   * chain; when only live settings changed (each with a watcher), the
   * running load takes them in place instead. Bad settings leave the running
   * plugin as it was. An inactive plugin is loaded (and recorded), as `load` would.
   */
  async reload (name: string): Promise<'reloaded' | 'live'> {
    return await this.#serial(async () => {
      if (!this.#loads.has(name)) {
        await this.#loadNow(name)
        return 'reloaded'
      }
      return await this.#reloadSettings(name, true) as 'reloaded' | 'live'
    })
  }

  /**
   * Reads every active plugin's settings files again (SIGHUP) and applies
   * what changed: live keys in place, other changes by a reload; a plugin
   * whose settings did not change is left alone, one whose new settings are
   * refused keeps running as it was (`failed`, with why; as `reload`, a
   * new load that throws leaves the plugin unloaded).
   */
  async reloadChangedSettings (): Promise<SettingsReload[]> {
    const outcomes: SettingsReload[] = []
    for (const name of [...this.#order]) {
      if (!this.#loads.has(name)) continue
      try {
        outcomes.push({ plugin: name, outcome: await this.#serial(async () => await this.#reloadSettings(name, false)) })
      } catch (err) {
        outcomes.push({ plugin: name, outcome: 'failed', error: (err as Error).message })
      }
    }
    return outcomes
  }

  /** `always`: a load with unchanged settings is reloaded too (what `reload` asks); else it is left alone. */
  async #reloadSettings (name: string, always: boolean): Promise<'reloaded' | 'live' | 'unchanged'> {
    const running = this.#loads.get(name)
    if (running === undefined) return 'unchanged'
    const config = await this.#config(name)
    const changed = changedKeys(running.config, config)
    if (!always && changed.length === 0) return 'unchanged'
    if (running.canApplyLive(changed)) {
      running.applyLive(config, changed)
      this.options.logger.info({ plugin: name, keys: changed }, 'plugin settings applied live')
      return 'live'
    }
    await this.#unload(name)
    await this.#start(name, config)
    return 'reloaded'
  }

  /**
   * Imports the plugin's code afresh (every module of its folder: fresh-import.ts)
   * and, when it runs, swaps the running load for one of the new code with
   * its settings as its files hold them now, checked by the new schema and
   * `check`. Nothing is unloaded until the new code imported and accepted
   * its settings; a new load that throws brings the old code back (loaded
   * again with its settings). Throughout the swap the chains and folds the
   * old load answered in are held (HOLDABLE_HOOKS), so no client or message
   * meets the node without them.
   * An inactive plugin only has its code replaced for its next load.
   */
  async replaceCode (name: string): Promise<CodeReplaced> {
    return await this.#serial(async () => {
      const file = this.#modules.get(name)
      if (file === undefined) throw new PluginError('not_found', `plugin ${name} not found`)
      let namespace: Record<string, unknown>
      try {
        namespace = await importFresh(file)
      } catch (err) {
        throw new PluginError('load_failed', `plugin ${name}: its new code does not import: ${await importFailure(err, dirname(file))}`, { cause: err })
      }
      const plugin = pluginOf(namespace, file, name)
      const running = this.#loads.get(name)
      if (running !== undefined) await this.#swap(name, running, plugin)
      this.#plugins.set(name, plugin)
      this.#namespaces.set(name, namespace)
      this.options.logger.info({ plugin: name, version: plugin.version, active: running !== undefined }, 'plugin code replaced')
      return { plugin: name, version: plugin.version, active: running !== undefined }
    })
  }

  async #swap (name: string, running: PluginLoad<unknown>, plugin: BrokerPlugin<unknown>): Promise<void> {
    let config: unknown
    try {
      config = await this.#config(name, plugin)
      await plugin.check?.(config, this.options.root)
    } catch (err) {
      throw new PluginError('load_failed', `plugin ${name}: its new code refuses its settings: ${(err as Error).message}`, { cause: err })
    }
    const old = await this.#module(name)
    const { hooks, logger } = this.options
    const held = HOLDABLE_HOOKS.filter((hook) => hooks.owners(hook).includes(name))
    await hooks.holding(held, async () => {
      await this.#unload(name)
      try {
        await this.#start(name, config, plugin)
      } catch (err) {
        const why = ((err as Error).cause as Error | undefined)?.message ?? (err as Error).message
        try {
          await this.#start(name, running.config, old)
        } catch (again) {
          logger.error({ plugin: name, err: (again as Error).message }, 'the old code of the plugin failed to load again: the plugin is not running')
          throw new PluginError('load_failed', `plugin ${name}: its new code failed to load: ${why}; its old code failed to load again: ${(again as Error).message}`, { cause: err })
        }
        throw new PluginError('load_failed', `plugin ${name}: its new code failed to load: ${why}; its old code was loaded again`, { cause: err })
      }
    })
  }

  /** The folder the plugin's code is imported from (its index.js in dist/, or index.ts when the node runs from sources). */
  codeFolder (name: string): string {
    const file = this.#modules.get(name)
    if (file === undefined) throw new PluginError('not_found', `plugin ${name} not found`)
    return dirname(file)
  }

  async #serial<T> (operation: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(operation, operation)
    this.#queue = run.catch(() => {})
    return await run
  }

  /** Unloads every active plugin (node stop); data/loaded_plugins is left as it is. */
  async stopAll (): Promise<void> {
    for (const name of [...this.#order].reverse()) {
      if (this.#loads.has(name)) await this.#unload(name)
    }
  }

  /**
   * The settings the active plugins show in the node's configuration API
   * (schema keys with a `datatype` meta), with the values in force; read from
   * the loads, so listing them imports and reads nothing.
   */
  configItems (): PluginConfigItem[] {
    const items: PluginConfigItem[] = []
    for (const [name, load] of this.#loads) {
      const config = load.config as Record<string, unknown>
      for (const [key, datatype] of load.configItems) items.push({ key, value: configItemValue(datatype, config[key]), datatype, app: name, kind: 'live' })
    }
    return items
  }

  /** The plugin's settings schema (its configuration items, its keys' types), imported if not loaded. */
  async schema (name: string): Promise<Joi.ObjectSchema> {
    return (await this.#module(name)).schema as Joi.ObjectSchema
  }

  /** The plugin module's exports (for plugins that offer an API, e.g. broker_auth_username's `addUser`). */
  async module (name: string): Promise<Record<string, unknown>> {
    await this.#module(name)
    return this.#namespaces.get(name)!
  }

  async #discover (): Promise<void> {
    const ext = SOURCE_RUNTIME ? 'index.ts' : 'index.js'
    for (const dir of this.options.pluginDirs) {
      if (!existsSync(dir)) continue
      for (const entry of await readdir(dir, { withFileTypes: true })) {
        const file = join(dir, entry.name, ext)
        if (entry.isDirectory() && entry.name.startsWith('broker_') && !this.#modules.has(entry.name) && existsSync(file)) {
          this.#modules.set(entry.name, file)
        }
      }
    }
  }

  /** Runs the plugin's `check` (what its load would refuse beyond the schema) on validated settings. */
  async check (name: string, config: unknown): Promise<void> {
    await (await this.#module(name)).check?.(config, this.options.root)
  }

  async #module (name: string): Promise<BrokerPlugin<unknown>> {
    const cached = this.#plugins.get(name)
    if (cached) return cached
    const file = this.#modules.get(name)
    if (file === undefined) throw new PluginError('not_found', `plugin ${name} not found`)
    const namespace = await import(pathToFileURL(file).href) as Record<string, unknown>
    const plugin = pluginOf(namespace, file, name)
    this.#plugins.set(name, plugin)
    this.#namespaces.set(name, namespace)
    return plugin
  }

  async #load (name: string): Promise<void> {
    await this.#start(name, await this.#config(name))
  }

  /** etc/plugins/<name>.conf of a plugin that was found (the file may not exist). */
  configFile (name: string): string {
    if (!this.#modules.has(name)) throw new PluginError('not_found', `plugin ${name} not found`)
    return join(this.options.etcDir, `${name}.conf`)
  }

  /** data/plugins/<name>.conf: the settings changed at run time, read over etc/plugins/<name>.conf. */
  overrideFile (name: string): string {
    if (!this.#modules.has(name)) throw new PluginError('not_found', `plugin ${name} not found`)
    return join(dirname(this.options.loadedFile), 'plugins', `${name}.conf`)
  }

  /** Reads etc/plugins/<name>.conf, then data/plugins/<name>.conf over it, and validates; an error names file and line. */
  async #config (name: string, plugin?: BrokerPlugin<unknown>): Promise<unknown> {
    plugin ??= await this.#module(name)
    const file = this.configFile(name)
    return validatePluginConfig(plugin.schema, await readPluginConfig(file, this.overrideFile(name)), file)
  }

  async #start (name: string, config: unknown, plugin?: BrokerPlugin<unknown>): Promise<void> {
    plugin ??= await this.#module(name)
    const { hooks, commands, logger, service, config: nodeConfig, publish, handle, root, alarms, counters, retained } = this.options
    const store = (plugin: string): PluginStore => this.#stores.get(plugin) ?? this.#stores.set(plugin, this.options.store(plugin)).get(plugin)!
    const cluster = { nodes: this.options.clusterNodes, nodeLeft: this.#nodeLeft }
    const load = new PluginLoad(plugin, config, { hooks, commands, routes: this.routes, listeners: this.#listeners, alarms, counters, config: nodeConfig, service, publish, handle, store, cluster, retained, logger, root, pluginCode: this.#pluginCode, provided: (plugin) => this.api(plugin) })
    try {
      await plugin.load(load.context)
    } catch (err) {
      await load.releases.unwind(logger)
      throw new PluginError('load_failed', `plugin ${name} failed to load: ${(err as Error).message}`, { cause: err })
    }
    this.#loads.set(name, load)
    logger.info({ plugin: name }, 'plugin loaded')
  }

  async #unload (name: string): Promise<void> {
    const load = this.#loads.get(name)
    if (load === undefined) return
    this.#loads.delete(name)
    const failed = await load.releases.unwind(this.options.logger)
    if (failed > 0) this.options.logger.error({ plugin: name, failed }, 'plugin failed to unload cleanly')
    this.options.logger.info({ plugin: name }, 'plugin unloaded')
  }

  /** Another node left the cluster: tells the loaded plugins that asked (a handler that throws is logged). */
  nodeLeft (node: string): void {
    for (const run of [...this.#nodeLeft]) {
      try {
        run(node)
      } catch (err) {
        this.options.logger.error({ err, node }, 'a plugin\'s node-left handler failed')
      }
    }
  }

  /** The listeners the loaded plugins serve, as records (SPEC §2.10). */
  listenerRecords (): ListenerRecord[] {
    return [...this.#listeners].map((report) => report())
  }

  /** What a loaded plugin offered through `ctx.provide`, or undefined. */
  api<T extends object> (name: string): T | undefined {
    return this.#loads.get(name)?.api as T | undefined
  }

  /** How many registrations a loaded plugin holds (hooks, timers, servers …), for leak checks; 0 when not loaded. */
  registrations (name: string): number {
    return this.#loads.get(name)?.releases.size ?? 0
  }
}

/** The plugin a module exports, checked against the contract (v2). */
function pluginOf (namespace: Record<string, unknown>, file: string, name: string): BrokerPlugin<unknown> {
  const plugin = namespace.default as BrokerPlugin<unknown> | undefined
  if (plugin?.name !== name || typeof plugin.load !== 'function') {
    throw new PluginError('load_failed', `${file} does not export a plugin named ${name}`)
  }
  if ('unload' in plugin) {
    throw new PluginError('load_failed', `${file} exports unload(): plugin contract v2 releases what load registered through ctx (use ctx.onUnload)`)
  }
  return plugin
}

/** The keys whose values differ between two validated settings objects. */
function changedKeys (before: unknown, after: unknown): string[] {
  const a = before as Record<string, unknown>
  const b = after as Record<string, unknown>
  return [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((key) => JSON.stringify(a[key]) !== JSON.stringify(b[key]))
}
