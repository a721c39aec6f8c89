// broker_lua_hook: EMQ X's emqx_lua_hook. Lua scripts in
// `<node.data_dir>/script/*.lua` define hook functions (on_message_publish,
// on_client_subscribe, …) and name them in register_hook(); each runs in its
// own Lua 5.4 VM (wasmoon: Lua compiled to WebAssembly), sandboxed, with a
// memory limit and a time limit per call (lua-vm.ts). README.md has the API.
import { isAbsolute, resolve } from 'node:path'
import { definePlugin, limitedLog, type LogLimit, type PluginContext } from '../../lib/plugin-kit/index.js'
import { luahookCommand } from './command.js'
import { luaHooks } from './hooks.js'
import type { ScriptEnv } from './script.js'
import { ScriptSet } from './scripts.js'
import { schema, type LuaHookConfig } from './settings.js'

/** Per script and kind (failures, print), and for drops: at most 10 records in 10 s. */
const LOG_LIMIT: LogLimit = Object.freeze({ perWindow: 10, windowMs: 10_000 })

/** The folder scripts are read from: `script` under the node's data folder. */
export function scriptDir (ctx: PluginContext<LuaHookConfig>): string {
  const dataDir = String(ctx.node.setting('node.data_dir') ?? 'data')
  return resolve(isAbsolute(dataDir) ? dataDir : resolve(ctx.root, dataDir), 'script')
}

export default definePlugin<LuaHookConfig>({
  name: 'broker_lua_hook',
  version: '0.1.0',
  description: 'Lua scripts (data/script/*.lua) on the hook points, as EMQ X lua_hook',
  schema,

  async load (ctx) {
    const counters = {
      dropped: ctx.metrics.counter('lua_hook/messages_dropped', 'messages a lua script dropped (on_message_publish answered false)'),
      errors: ctx.metrics.counter('lua_hook/errors', 'lua script calls skipped: an error, or an answer the hook cannot use'),
      timeouts: ctx.metrics.counter('lua_hook/timeouts', 'lua script calls stopped at lua.hook.timeout')
    }
    const env = (): ScriptEnv => ({
      timeoutMs: () => ctx.config['lua.hook.timeout'],
      memoryMax: () => ctx.config['lua.hook.max_memory'],
      warn: limitedLog((fields, message) => ctx.logger.warn(fields, message), LOG_LIMIT),
      print: limitedLog((fields, message) => ctx.logger.info(fields, message), LOG_LIMIT),
      later: (run, ms) => ctx.timers.setTimeout(run, ms),
      onFailure: (kind) => counters[kind === 'timeout' ? 'timeouts' : 'errors'].inc()
    })
    const scripts = new ScriptSet(scriptDir(ctx), env)
    ctx.onUnload(() => scripts.close())
    ctx.onSettingChange('lua.hook.max_memory', (bytes) => scripts.setMemoryMax(bytes))

    const dropped = limitedLog((fields, message) => ctx.logger.info(fields, message), LOG_LIMIT)
    const hooks = luaHooks(scripts, (script, topic) => {
      counters.dropped.inc()
      dropped({ script: script.name, topic }, 'message dropped by a lua script')
    })
    ctx.hooks.add('message.publish', hooks.publish)
    ctx.hooks.add('client.subscribe', hooks.subscribe)
    ctx.hooks.add('client.unsubscribe', hooks.unsubscribe)
    ctx.hooks.add('client.connected', hooks.connected)
    ctx.hooks.add('client.disconnected', hooks.disconnected)
    ctx.hooks.add('session.subscribed', (client, topic) => { hooks.sessionSubscribed(client, topic) })
    ctx.hooks.add('session.unsubscribed', hooks.sessionUnsubscribed)
    ctx.hooks.add('message.delivered', hooks.delivered)
    ctx.hooks.add('message.acked', hooks.acked)
    ctx.commands.add(luahookCommand(scripts))

    await scripts.loadAll((name, why) => ctx.logger.warn({ script: name, error: why }, 'lua script not loaded'))
    const loaded = (await scripts.list()).filter((row) => row.status === 'loaded').map((row) => row.name)
    ctx.logger.info({ dir: scripts.dir, scripts: loaded }, 'lua scripts loaded')
  }
})
