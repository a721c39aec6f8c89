// What a script may reach: Lua 5.4's base library, string, table, math,
// utf8 and coroutine, and of os only the clock and date functions. Gone: io,
// os.execute / exit / getenv / remove / rename / tmpname, package and require,
// dofile and loadfile, debug (it reaches the registry and could lift the
// instruction hook), string.dump, warn; `load` takes text only (a precompiled
// chunk can break the VM); `collectgarbage` cannot stop the collector.
// `print` writes to the node's log (rate-limited by the owner, long lines cut).
import type { LuaVm } from './lua-vm.js'

const PRELUDE = `
local loaded = package.loaded
for _, name in ipairs({ 'io', 'os', 'debug', 'package' }) do loaded[name] = nil end
local os_ = os
os = { time = os_.time, clock = os_.clock, date = os_.date, difftime = os_.difftime }
io, debug, package, require, dofile, loadfile, warn = nil, nil, nil, nil, nil, nil, nil
string.dump = nil
local load_, select_ = load, select
load = function (...)
  local chunk, name, _, env = ...
  if select_('#', ...) >= 4 then return load_(chunk, name, 't', env) end
  return load_(chunk, name, 't')
end
local collect_ = collectgarbage
local allowed = { collect = true, count = true, step = true, isrunning = true }
collectgarbage = function (option, ...)
  if option ~= nil and not allowed[option] then error("collectgarbage: option '" .. tostring(option) .. "' is not allowed", 2) end
  return collect_(option, ...)
end
`

/** A printed line longer than this is cut (the log is not the place for a payload dump). */
const MAX_LINE = 2000

export function buildSandbox (vm: LuaVm, print: (line: string) => void): void {
  vm.install(PRELUDE)
  vm.defineGlobal('print', (args) => {
    const line = args.join('\t')
    print(line.length > MAX_LINE ? `${line.slice(0, MAX_LINE)}… (${line.length} characters)` : line)
  })
}
