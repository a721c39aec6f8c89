// A plugin's durable key → string storage: a sublevel of the node's store.
import type { Level } from 'level'
import { textSublevel } from '../engine/store.js'
import type { PluginStore } from './contract.js'

export function pluginStore (db: Level<string, Buffer>, plugin: string): PluginStore {
  const level = textSublevel(db, `plugin_${plugin}`)
  return {
    get: async (key) => await level.get(key),
    put: async (key, value) => { await level.put(key, value) },
    del: async (key) => { await level.del(key) },
    entries: () => level.iterator()
  }
}
