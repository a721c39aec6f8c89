// The plugins of this node: list, load, unload, reload, and their settings
// (SPEC §2.13, §2.15): read from etc/plugins/<name>.conf with
// data/plugins/<name>.conf over it, changed in the data/ file.
import { readFile } from 'node:fs/promises'
import { parseConfigText } from '../config/parse.js'
import { RouteError, type BrokerPlugin } from '../plugin-kit/contract.js'
import { settingTypes } from '../plugin-kit/setting-types.js'
import type { CodeReplaced, PluginHost, PluginRecord } from '../plugins/host.js'
import { overrideText, readPluginConfig, readPluginConfigLines, removeConfigKeys, resetToDefaults, validatePluginConfig, writeOverrideFile } from '../plugins/plugin-config.js'
import type { OperationContext } from './context.js'
import type { PluginRouteAnswer, PluginRouteCall, PluginSetting } from './facts.js'
import { ServiceError } from './service-error.js'

export interface PluginOperations {
  plugins: () => Promise<PluginRecord[]>
  loadPlugin: (name: string) => Promise<void>
  unloadPlugin: (name: string) => Promise<void>
  /** Re-reads a plugin's settings and restarts it (loads it when inactive). */
  reloadPlugin: (name: string) => Promise<void>
  /**
   * Imports a plugin's code afresh and swaps its running load for the new
   * code's (broker_reloader); `failed` with why when the new code does not
   * import, refuses its settings or fails to load (the old code runs on).
   */
  reloadPluginCode: (name: string) => Promise<CodeReplaced>
  /**
   * A plugin's settings, the values in force: through the plugin module's
   * `describeSettings(settings)` when it exports one, else every key of its
   * files with an empty description. Keys set in the files are required.
   */
  pluginSettings: (name: string) => Promise<PluginSetting[]>
  /**
   * Sets some of a plugin's settings in data/plugins/<name>.conf (etc/ is left
   * as the operator wrote it; a value equal to etc/'s removes its override):
   * validated with its schema together with the rest of its settings (a
   * refusal leaves the files untouched), written in one step, then the plugin
   * reloads if it is active. `reloadLater` answers before the reload (a plugin
   * reloading itself).
   */
  setPluginSettings: (name: string, values: Readonly<Record<string, string | null>>, options?: { reloadLater?: boolean }) => Promise<void>
  /**
   * Answers a plugin's route on this node. The management API calls it on the
   * node a `/nodes/{node}/…` plugin route names, so that node answers; a path
   * no plugin serves here is `not_found`.
   */
  pluginRoute: (call: PluginRouteCall) => Promise<PluginRouteAnswer>
}

export function pluginOperations ({ parts }: OperationContext): PluginOperations {
  const host = (): PluginHost => {
    const running = parts.plugins()
    if (running === undefined) throw new ServiceError('failed', 'the plugin host is not running yet')
    return running
  }

  /** The host's refusals (unknown plugin, wrong state) as ServiceErrors. */
  const refusing = async <T>(operation: () => T | Promise<T>): Promise<T> => {
    try {
      return await operation()
    } catch (err) {
      const code = (err as { code?: string }).code
      if (code === 'not_found' || code === 'already_started' || code === 'not_started') throw new ServiceError(code, (err as Error).message)
      throw err
    }
  }

  return {
    plugins: async () => await host().list(),
    loadPlugin: async (name) => { await refusing(async () => await host().load(name)) },
    unloadPlugin: async (name) => { await refusing(async () => await host().unload(name)) },
    // an unknown plugin is inactive, so reload goes to load, which refuses it (not_found)
    reloadPlugin: async (name) => { await refusing(async () => await host().reload(name)) },
    reloadPluginCode: async (name) => await refusing(async () => {
      try {
        return await host().replaceCode(name)
      } catch (err) {
        if ((err as { code?: string }).code === 'load_failed') throw new ServiceError('failed', (err as Error).message)
        throw err
      }
    }),
    pluginSettings: async (name) => {
      const plugins = host()
      const file = await refusing(() => plugins.configFile(name))
      const lines = await readPluginConfig(file, plugins.overrideFile(name))
      const settings: Record<string, string> = {}
      for (const line of lines) settings[line.key] = line.value
      const namespace = await refusing(async () => await plugins.module(name))
      const described = typeof namespace.describeSettings === 'function'
        ? (namespace.describeSettings as (s: Record<string, string>) => PluginSetting[])(settings)
        : Object.entries(settings).map(([key, value]) => ({ key, value, desc: '', required: true }))
      const types = settingTypes(await plugins.schema(name))
      return described.map((setting) => ({ ...setting, ...types.get(setting.key) }))
    },
    setPluginSettings: async (name, values, { reloadLater = false } = {}) => {
      const plugins = host()
      const file = await refusing(() => plugins.configFile(name))
      const overrideFile = plugins.overrideFile(name)
      const namespace = await refusing(async () => await plugins.module(name))
      const plugin = namespace.default as BrokerPlugin<unknown>
      let text: string
      try {
        const base = await readPluginConfigLines(file)
        const { set, unset } = resetToDefaults(plugin.schema, base, values, file)
        text = removeConfigKeys(overrideText(await readText(overrideFile), base, set, overrideFile, name), unset)
        const config = validatePluginConfig(plugin.schema, [...base, ...parseConfigText(text, overrideFile)], file)
        // what the plugin's load would refuse is refused now, not saved to fail every later load
        await plugins.check(name, config)
      } catch (err) {
        throw new ServiceError('bad_value', (err as Error).message)
      }
      await writeOverrideFile(overrideFile, text)
      if (!plugins.isActive(name)) return
      if (!reloadLater) {
        await plugins.reload(name)
        return
      }
      setTimeout(() => {
        plugins.reload(name).catch((err: Error) => parts.observability.logger.error({ err, plugin: name }, 'plugin reload after a settings change failed'))
      }, 0)
    },
    pluginRoute: async ({ method, path, query, payload }) => {
      const found = host().routes.match(method, path)
      if (found === undefined) throw new ServiceError('not_found', `no plugin serves ${method} ${path} on ${parts.config.get('node.name')}`)
      try {
        return { body: await found.route.handler({ params: found.params, query, payload }) }
      } catch (err) {
        if (err instanceof RouteError) return { refused: { status: err.status, code: err.code, message: err.message } }
        throw err
      }
    }
  }
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
