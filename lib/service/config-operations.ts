// The node's settings (SPEC §2.14) and the ACL rules: list and change them,
// read the ACL file again, forget a client's cached ACL answers.
import { clientState } from '../access/client-state.js'
import { changeSetting, OverrideWriteError } from '../config/overrides.js'
import { canonicalKey } from '../config/schema.js'
import { configItemKeys } from '../plugin-kit/contract.js'
import type { OperationContext } from './context.js'
import type { ConfigFacts } from './facts.js'
import type { PluginOperations } from './plugin-operations.js'
import { SECRET_SETTINGS } from './node-status.js'
import { ServiceError } from './service-error.js'

export interface ConfigOperations {
  /**
   * Every setting of the node, then the active plugins' settings shown as
   * config items (app = the plugin, e.g. broker_retainer's `retainer.*`); a
   * secret one shows `******` when set, never its value.
   */
  configs: () => ConfigFacts[]
  /**
   * Changes one setting of `app` now (parts that read it act on it at once, or
   * on the `change` event) and keeps it in <data_dir>/configs.override when
   * the configuration has overrides (lib/config/overrides.ts). A plugin's
   * setting is changed as its settings API does (data/plugins/<app>.conf, the
   * plugin reloads unless the key is live); `nextStart` does not apply to it.
   */
  setConfig: (app: string, key: string, value: string, origin?: string, nextStart?: boolean) => Promise<void>
  /** Reads `mqtt.acl_file` again and forgets every client's cached answers; a bad file keeps the rules in force. */
  reloadAcl: () => Promise<number>
  /** Forgets a connected client's cached ACL answers for one topic, or all; false when it is not connected here. */
  cleanAclCache: (clientId: string, topic?: string) => boolean
}

export function configOperations (context: OperationContext, plugins: Pick<PluginOperations, 'setPluginSettings'>): ConfigOperations {
  const { config, access } = context.parts
  /** a plugin's setting shown as a config item: changed through the plugin's settings */
  const setPluginItem = async (app: string, key: string, value: string): Promise<void> => {
    const host = context.parts.plugins()
    const keys = host === undefined ? undefined : await host.schema(app).then(configItemKeys, () => undefined)
    if (keys?.has(key) !== true) throw new ServiceError('not_found', `no setting ${key} in ${app}`)
    await plugins.setPluginSettings(app, { [key]: value })
  }
  return {
    configs: () => [
      ...config.items().map(({ key, value, datatype, app, kind }) => ({ key, value: SECRET_SETTINGS.has(key) && value !== '' ? '******' : value, datatype, app, kind })),
      ...context.parts.plugins()?.configItems() ?? []
    ],
    setConfig: async (app, key, value, origin = 'management api', nextStart = false) => {
      const item = config.items().find((i) => i.key === canonicalKey(key))
      if (item === undefined || item.app !== app) return await setPluginItem(app, key, value)
      try {
        changeSetting(config, key, value, origin, nextStart)
      } catch (err) {
        throw new ServiceError(err instanceof OverrideWriteError ? 'failed' : 'bad_value', (err as Error).message)
      }
    },
    reloadAcl: async () => {
      let count: number
      try {
        count = await access.reload()
      } catch (err) {
        throw new ServiceError('bad_value', (err as Error).message)
      }
      for (const client of context.online()) {
        const state = clientState(client)
        if (state !== undefined) access.cleanCache(state)
      }
      return count
    },
    cleanAclCache: (clientId, topic) => {
      const client = context.onlineClient(clientId)
      const state = client === undefined ? undefined : clientState(client)
      if (state === undefined) return false
      access.cleanCache(state, topic)
      return true
    }
  }
}
