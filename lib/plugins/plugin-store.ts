// A plugin's durable key → string storage: a section of the node's text
// stores (LevelDB on one node, Redis in a cluster), named after the plugin.
import type { TextStores } from '../engine/text-store.js'
import type { PluginStore } from '../plugin-kit/contract.js'

export function pluginStore (stores: TextStores, plugin: string): PluginStore {
  return stores(`plugin_${plugin}`)
}
