// The settings of etc/plugins/broker_lua_hook.conf. Both are live: a change
// made at run time applies to the next call (the memory limit to every VM).
import Joi from 'joi'
import { durationSetting, parseBytesize } from '../../lib/plugin-kit/index.js'

export interface LuaHookConfig {
  /** ms a script's call may run before it is stopped */
  'lua.hook.timeout': number
  /** bytes of Lua memory one script's VM may hold */
  'lua.hook.max_memory': number
}

const MB = 1024 * 1024
export const MAX_TIMEOUT_MS = 60_000
export const MIN_MEMORY = MB
export const MAX_MEMORY = 1024 * MB

function bytesizeSetting (def: number, min: number, max: number): Joi.AnySchema {
  return Joi.any().custom((raw: unknown) => {
    if (typeof raw !== 'string' && typeof raw !== 'number') throw new Error('it is not a size (e.g. 16MB)')
    const bytes = parseBytesize(String(raw).trim())
    if (bytes < min || bytes > max) throw new Error(`"${raw}" is not between ${min / MB}MB and ${max / MB}MB`)
    return bytes
  }).default(def)
}

export const schema = Joi.object<LuaHookConfig>({
  'lua.hook.timeout': durationSetting(100, 1, { ms: MAX_TIMEOUT_MS, said: `${MAX_TIMEOUT_MS / 1000}s` }).meta({ live: true }),
  'lua.hook.max_memory': bytesizeSetting(16 * MB, MIN_MEMORY, MAX_MEMORY).meta({ live: true })
})
