// The raw exports of wasmoon's Lua 5.4 WebAssembly module that the hot path
// calls directly: wasmoon's own wrappers convert every string through UTF-8
// (a payload is bytes, and may hold NUL) and go through `ccall` per call.
// Pointers are 32-bit offsets into the module's memory; `lua_Integer` is a
// 64-bit integer, so it crosses as a BigInt.
import { LuaFactory, LuaGlobal } from 'wasmoon'

/** The module's exports this plugin calls (names as Emscripten exports them). */
export interface LuaExports {
  HEAPU8: Uint8Array
  _malloc: (size: number) => number
  _free: (pointer: number) => void
  addFunction: (fn: (...args: number[]) => number | undefined, signature: string) => number
  _lua_gettop: (L: number) => number
  _lua_checkstack: (L: number, n: number) => number
  _lua_settop: (L: number, index: number) => void
  _lua_type: (L: number, index: number) => number
  _lua_toboolean: (L: number, index: number) => number
  _lua_tonumberx: (L: number, index: number, isnum: number) => number
  _lua_tolstring: (L: number, index: number, lengthOut: number) => number
  _lua_pushnil: (L: number) => void
  _lua_pushboolean: (L: number, value: number) => void
  _lua_pushinteger: (L: number, value: bigint) => void
  _lua_pushlstring: (L: number, bytes: number, length: number) => number
  _lua_pushcclosure: (L: number, fn: number, upvalues: number) => void
  _lua_rawgeti: (L: number, index: number, n: bigint) => number
  _lua_setglobal: (L: number, name: number) => void
  _lua_pcallk: (L: number, nargs: number, nresults: number, errfunc: number, ctx: number, k: number) => number
  _lua_sethook: (L: number, hook: number, mask: number, count: number) => void
  _luaL_ref: (L: number, table: number) => number
  _luaL_loadbufferx: (L: number, bytes: number, length: number, name: number, mode: number) => number
  _luaL_openlibs: (L: number) => void
  _luaL_tolstring: (L: number, index: number, lengthOut: number) => number
}

/** A fresh module (its own memory and function table) and a Lua state in it whose allocations are counted. */
export interface LuaInstance {
  exports: LuaExports
  global: LuaGlobal
  /** the main state's address */
  L: number
}

export async function newLuaInstance (): Promise<LuaInstance> {
  const wasm = await new LuaFactory().getLuaModule()
  const global = new LuaGlobal(wasm, true)
  return { exports: wasm.module as unknown as LuaExports, global, L: global.address }
}

export const LUA_OK = 0
export const LUA_MULTRET = -1
export const LUA_REGISTRYINDEX = -1_000_000 - 1000
export const LUA_MASKCOUNT = 8
export const LuaTypes = { nil: 0, boolean: 1, number: 3, string: 4, table: 5, function: 6 } as const
