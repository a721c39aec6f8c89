// string.find, string.match, string.gmatch and string.gsub of the sandbox,
// on the JavaScript matcher (patterns.ts) that checks the call's deadline as
// it works, in place of Lua's C matcher that cannot be interrupted. One
// native entry does the matching; the Lua wrappers below check arguments as
// Lua does, and gsub's replacement (a string with %0-%9, a table or a
// function) runs in Lua, under the instruction hook.
import { MatchState, PatternError, noSpecials, search } from './patterns.js'
import type { LuaExports } from './wasm.js'

/** What the string library needs of its VM. */
export interface PatternHost {
  readonly exports: LuaExports
  /** throws (ending the VM) when the current call is past its deadline */
  overdue: () => void
  /** a global C function written in JS: it reads its arguments from `L`'s stack, pushes its answers and returns their count */
  defineRaw: (name: string, fn: (L: number) => number) => void
  /** runs sandbox code; throws if it fails */
  install: (source: string) => void
}

const MODE = { find: 0, match: 1, gmatch: 2, gsub: 3 } as const
const ENTRY = '__lua_hook_match'

// The wrappers keep the C functions they need (plain find for short fixed
// needles, sub, byte) as locals; scripts see only the new string functions.
const WRAPPERS = `
local M = ${ENTRY}
${ENTRY} = nil
local type, tostring, tonumber, error, select = type, tostring, tonumber, error, select
local tointeger, concat, pack, unpack = math.tointeger, table.concat, table.pack, table.unpack
local sub, byte, nfind = string.sub, string.byte, string.find
local FIND, MATCH, GMATCH, GSUB = ${MODE.find}, ${MODE.match}, ${MODE.gmatch}, ${MODE.gsub}

-- argument checks as luaL_check*: 'no value' for an argument not given (count: how many were)
local function str (v, n, fname, count)
  local t = type(v)
  if t == 'string' then return v end
  if t == 'number' then return tostring(v) end
  error(("bad argument #%d to 'string.%s' (string expected, got %s)"):format(n, fname, n > count and 'no value' or t), 3)
end
local function int (v, n, fname, default)
  if v == nil then return default end
  local x = tonumber(v)
  if x == nil then error(("bad argument #%d to 'string.%s' (number expected, got %s)"):format(n, fname, type(v)), 3) end
  local i = tointeger(x)
  if i == nil then error(("bad argument #%d to 'string.%s' (number has no integer representation)"):format(n, fname), 3) end
  return i
end
local function start (init, len)
  if init > 0 then return init elseif init == 0 or init < -len then return 1 end
  return len + init + 1
end
-- called in tail position: level 2 is the script that called the wrapper
local function answer (ok, ...)
  if ok == false then error(..., 2) end
  return ok, ...
end

string.find = function (...)
  local s, p, init, plain = ...
  local count = select('#', ...)
  s, p = str(s, 1, 'find', count), str(p, 2, 'find', count)
  init = start(int(init, 3, 'find', 1), #s)
  if init > #s + 1 then return nil end
  return answer(M(s, p, init, FIND, plain and true or false))
end

string.match = function (...)
  local s, p, init = ...
  local count = select('#', ...)
  s, p = str(s, 1, 'match', count), str(p, 2, 'match', count)
  init = start(int(init, 3, 'match', 1), #s)
  if init > #s + 1 then return nil end
  return answer(M(s, p, init, MATCH))
end

string.gmatch = function (...)
  local s, p, init = ...
  local count = select('#', ...)
  s, p = str(s, 1, 'gmatch', count), str(p, 2, 'gmatch', count)
  local src = start(int(init, 3, 'gmatch', 1), #s)
  if src > #s + 1 then src = #s + 2 end
  local last = 0
  local function step (e, ...)
    if e == false then error(..., 2) end
    if e == nil then src = #s + 2 return nil end
    src, last = e, e
    return ...
  end
  return function ()
    if src > #s + 1 then return nil end
    return step(M(s, p, src, GMATCH, last))
  end
end

local function expand (repl, whole, caps, ncap)
  if not nfind(repl, '%', 1, true) then return repl end
  local out, i = {}, 1
  while true do
    local j = nfind(repl, '%', i, true)
    if not j then out[#out + 1] = sub(repl, i) break end
    out[#out + 1] = sub(repl, i, j - 1)
    local d = byte(repl, j + 1)
    if d == 37 then out[#out + 1] = '%'
    elseif d == 48 then out[#out + 1] = whole
    elseif d and d > 48 and d <= 57 then
      local k = d - 48
      local v
      if k <= ncap then v = caps[k] elseif k == 1 and ncap == 0 then v = whole
      else error(('invalid capture index %%%d'):format(k), 3) end
      out[#out + 1] = type(v) == 'number' and tostring(v) or v
    else error("invalid use of '%' in replacement string", 3) end
    i = j + 2
  end
  return concat(out)
end

string.gsub = function (...)
  local s, p, repl, n = ...
  local count = select('#', ...)
  s, p = str(s, 1, 'gsub', count), str(p, 2, 'gsub', count)
  local tr = type(repl)
  if tr == 'number' then repl, tr = tostring(repl), 'string' end
  if tr ~= 'string' and tr ~= 'table' and tr ~= 'function' then
    error(("bad argument #3 to 'string.gsub' (string/function/table expected, got %s)"):format(count < 3 and 'no value' or tr), 2)
  end
  local max = int(n, 4, 'gsub', #s + 1)
  local anchor = byte(p, 1) == 94
  local out, done, src, last = {}, 0, 1, 0
  while done < max do
    local r = pack(M(s, p, src, GSUB, last, anchor))
    if r[1] == false then error(r[2], 2) end
    if r[1] == nil then break end
    local from, e, ncap = r[1], r[2], r[3]
    out[#out + 1] = sub(s, src, from - 1)
    done = done + 1
    local whole = sub(s, from, e - 1)
    local v
    if tr == 'string' then
      v = expand(repl, whole, { select(4, unpack(r, 1, r.n)) }, ncap)
    else
      local first = r[4]
      if tr == 'table' then v = repl[first] else v = repl(select(4, unpack(r, 1, r.n))) end
      if not v then v = whole
      elseif type(v) == 'number' then v = tostring(v)
      elseif type(v) ~= 'string' then error(('invalid replacement value (a %s)'):format(type(v)), 2) end
    end
    out[#out + 1] = v
    src, last = e, e
    if anchor then break end
  end
  out[#out + 1] = sub(s, src)
  return concat(out), done
end
`

/** Installs the pattern functions into the VM's string table. */
export function installPatterns (host: PatternHost): void {
  const x = host.exports
  host.defineRaw(ENTRY, (L) => {
    // M(s, p, init, mode, plain | lastmatch, anchor): the wrappers pass checked strings and integers
    const lengthOut = x._malloc(4)
    try {
      const sPointer = x._lua_tolstring(L, 1, lengthOut)
      const sLength = readLength(x, lengthOut)
      const pPointer = x._lua_tolstring(L, 2, lengthOut)
      const pLength = readLength(x, lengthOut)
      const init = x._lua_tonumberx(L, 3, 0) - 1
      const mode = x._lua_tonumberx(L, 4, 0)
      const heap = x.HEAPU8
      const subject = heap.subarray(sPointer, sPointer + sLength)
      let pattern = heap.subarray(pPointer, pPointer + pLength)
      if (mode === MODE.find && (x._lua_toboolean(L, 5) !== 0 || noSpecials(pattern))) {
        const at = Buffer.from(subject.buffer, subject.byteOffset, subject.length).indexOf(Buffer.from(pattern.buffer, pattern.byteOffset, pattern.length), init)
        if (at < 0) return pushNil(x, L)
        x._lua_pushinteger(L, BigInt(at + 1))
        x._lua_pushinteger(L, BigInt(at + pLength))
        return 2
      }
      let anchor: boolean
      let lastMatch = -1
      if (mode === MODE.gmatch) {
        anchor = false
        lastMatch = x._lua_tonumberx(L, 5, 0) - 1
      } else if (mode === MODE.gsub) {
        lastMatch = x._lua_tonumberx(L, 5, 0) - 1
        anchor = x._lua_toboolean(L, 6) !== 0
      } else {
        anchor = pattern[0] === 0x5e
      }
      if (anchor) pattern = pattern.subarray(1)
      const ms = new MatchState(subject, pattern, host.overdue)
      let found: [number, number] | undefined
      try {
        found = search(ms, init, anchor, 0, lastMatch)
      } catch (err) {
        if (err instanceof PatternError) return pushError(x, L, err.message)
        throw err
      }
      if (found === undefined) return pushNil(x, L)
      const [s, e] = found
      const captures = mode === MODE.find ? ms.level : Math.max(ms.level, 1)
      x._lua_checkstack(L, captures + 3)
      let pushed = 0
      if (mode === MODE.find) {
        x._lua_pushinteger(L, BigInt(s + 1))
        x._lua_pushinteger(L, BigInt(e))
        pushed = 2
      } else if (mode === MODE.gmatch) {
        x._lua_pushinteger(L, BigInt(e + 1))
        pushed = 1
      } else if (mode === MODE.gsub) {
        x._lua_pushinteger(L, BigInt(s + 1))
        x._lua_pushinteger(L, BigInt(e + 1))
        x._lua_pushinteger(L, BigInt(ms.level))
        pushed = 3
      }
      for (let i = 0; i < captures; i++) {
        let capture: [number, number]
        try {
          capture = ms.capture(i, s, e)
        } catch (err) {
          if (err instanceof PatternError) {
            x._lua_settop(L, -1 - pushed)
            return pushError(x, L, err.message)
          }
          throw err
        }
        const [from, length] = capture
        if (length === -2) x._lua_pushinteger(L, BigInt(from + 1))
        else x._lua_pushlstring(L, sPointer + from, length)
        pushed++
      }
      return pushed
    } finally {
      x._free(lengthOut)
    }
  })
  host.install(WRAPPERS)
}

function readLength (x: LuaExports, pointer: number): number {
  const h = x.HEAPU8
  return (h[pointer]! | (h[pointer + 1]! << 8) | (h[pointer + 2]! << 16) | (h[pointer + 3]! << 24)) >>> 0
}

function pushNil (x: LuaExports, L: number): number {
  x._lua_pushnil(L)
  return 1
}

/** `false, message`: the wrapper raises it at the script's line. */
function pushError (x: LuaExports, L: number, message: string): number {
  x._lua_pushboolean(L, 0)
  const bytes = Buffer.from(message)
  const pointer = x._malloc(bytes.length + 1)
  x.HEAPU8.set(bytes, pointer)
  x._lua_pushlstring(L, pointer, bytes.length)
  x._free(pointer)
  return 2
}
