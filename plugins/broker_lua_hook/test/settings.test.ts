// The settings through the host's reader and the plugin's schema, including
// the shipped etc/plugins/broker_lua_hook.conf; a bad value is refused with
// file:line and key, also when the plugin loads in a node.
import t from 'tap'
import { join } from 'node:path'
import { INSTALL_ROOT, parseConfigText, readPluginConfigLines, startPluginNode, validatePluginConfig } from '../../../lib/plugin-kit/testing.js'
import { schema, type LuaHookConfig } from '../settings.js'

const FILE = 'etc/plugins/broker_lua_hook.conf'
const read = (text: string): LuaHookConfig => validatePluginConfig(schema, parseConfigText(text, FILE), FILE)

t.test('the shipped file holds the defaults', async (t) => {
  const file = join(INSTALL_ROOT, FILE)
  const config = validatePluginConfig(schema, await readPluginConfigLines(file), file)
  t.same(config, { 'lua.hook.timeout': 100, 'lua.hook.max_memory': 16 * 1024 * 1024 })
  t.same(read(''), config, 'an empty file: the same defaults')
})

t.test('durations and sizes in their units', async (t) => {
  t.same(read('lua.hook.timeout = 2s\nlua.hook.max_memory = 2048KB'), { 'lua.hook.timeout': 2000, 'lua.hook.max_memory': 2 * 1024 * 1024 })
  t.same(read('lua.hook.timeout = 5ms\nlua.hook.max_memory = 1GB'), { 'lua.hook.timeout': 5, 'lua.hook.max_memory': 1024 ** 3 })
})

t.test('bad values are refused with file:line and key', async (t) => {
  t.throws(() => read('lua.hook.timeout = soon'), { message: /^etc\/plugins\/broker_lua_hook\.conf:1: lua\.hook\.timeout: .*not a duration/ })
  t.throws(() => read('\nlua.hook.timeout = 0ms'), { message: /^etc\/plugins\/broker_lua_hook\.conf:2: lua\.hook\.timeout: .*shorter than 1ms/ })
  t.throws(() => read('lua.hook.timeout = 2m'), { message: /:1: lua\.hook\.timeout: .*longer than 60s/ })
  t.throws(() => read('lua.hook.max_memory = 512KB'), { message: /:1: lua\.hook\.max_memory: .*between 1MB and 1024MB/ })
  t.throws(() => read('lua.hook.max_memory = lots'), { message: /:1: lua\.hook\.max_memory: .*not a size/ })
  t.throws(() => read('lua.hook.script_dir = /tmp'), { message: /:1: lua\.hook\.script_dir: unknown setting$/ })
})

t.test('a node refuses to load the plugin with a bad value, naming the file and line', async (t) => {
  await t.rejects(startPluginNode({ plugin: 'broker_lua_hook', settings: { 'lua.hook.timeout': 'never' } }), { message: /broker_lua_hook\.conf:\d+: lua\.hook\.timeout: / })
})
