// One script's Lua VM: its own WebAssembly instance (memory, function table)
// holding one Lua 5.4 state, sandboxed (sandbox.ts), whose allocations are
// counted against a limit. Calls are synchronous: arguments are pushed, the
// function runs in protected mode, the answers are read back.
//
// A call that runs past its deadline is stopped by a count hook (every
// HOOK_EVERY VM instructions it reads the clock): past the deadline it throws
// a JavaScript exception, which no Lua `pcall` can catch (Lua's errors are
// Emscripten longjmps, a different kind of throw), so it unwinds the whole
// WebAssembly stack back to `call`. The state is then half-way through an
// instruction and cannot be trusted again: the VM is dead and its instance is
// dropped whole (the script is built again from its source by its owner). A
// WebAssembly trap (e.g. an abort) ends the VM the same way.
import { buildSandbox } from './sandbox.js'
import { installPatterns, type PatternHost } from './string-lib.js'
import { LUA_MASKCOUNT, LUA_MULTRET, LUA_OK, LUA_REGISTRYINDEX, LuaTypes, newLuaInstance, type LuaExports, type LuaInstance } from './wasm.js'

/** VM instructions between two looks at the clock. */
const HOOK_EVERY = 1000
/** answers read back from a call; more are ignored */
const MAX_RESULTS = 8
/** the scratch buffer kept for arguments; larger arguments get a buffer of their own */
const SCRATCH_BYTES = 64 * 1024

/** What a hook passes to Lua. `undefined` is nil; strings go as UTF-8 bytes. */
export type LuaArg = string | Buffer | number | boolean | undefined
/** What Lua answers, as JS: strings stay bytes; a table or function is only named. */
export type LuaValue = null | boolean | number | Buffer | { type: string }

export type CallOutcome =
  | { ok: true, values: LuaValue[] }
  /** a Lua error: the VM goes on */
  | { ok: false, kind: 'error', message: string }
  /** past the deadline (`timeout`) or a WebAssembly failure (`crash`): the VM is dead */
  | { ok: false, kind: 'timeout' | 'crash', message: string }

export interface VmOptions {
  /** the chunk name in error messages, e.g. `@test.lua` */
  chunkName: string
  memoryMax: number
  /** where the script's print() writes */
  print: (line: string) => void
}

class Deadline extends Error {}

const TYPE_NAMES: Record<number, string> = { 2: 'userdata', 5: 'table', 6: 'function', 7: 'userdata', 8: 'thread' }

export class LuaVm implements PatternHost {
  private deadline = Infinity
  private dead = false
  private busy = false
  readonly exports: LuaExports
  private readonly x: LuaExports
  private readonly L: number
  /** 4 bytes for lua_tolstring's length answer */
  private readonly lengthOut: number
  private readonly scratch: number

  private constructor (private readonly instance: LuaInstance, private readonly options: VmOptions) {
    this.x = this.exports = instance.exports
    this.L = instance.L
    this.lengthOut = this.x._malloc(4)
    this.scratch = this.x._malloc(SCRATCH_BYTES)
    instance.global.setMemoryMax(options.memoryMax)
    const hook = this.x.addFunction(() => {
      this.overdue()
      return undefined
    }, 'vii')
    this.x._lua_sethook(this.L, hook, LUA_MASKCOUNT, HOOK_EVERY)
  }

  /** A VM with the sandboxed standard library, before any script runs in it. */
  static async create (options: VmOptions): Promise<LuaVm> {
    const vm = new LuaVm(await newLuaInstance(), options)
    vm.x._luaL_openlibs(vm.L)
    buildSandbox(vm, options.print)
    installPatterns(vm)
    return vm
  }

  get alive (): boolean { return !this.dead }
  get memoryUsed (): number { return this.dead ? 0 : this.instance.global.getMemoryUsed() }
  setMemoryMax (bytes: number): void { this.instance.global.setMemoryMax(bytes) }

  /** Throws (the VM dies) when the current call is past its deadline: for work done outside Lua's instructions. */
  readonly overdue = (): void => {
    if (performance.now() > this.deadline) throw new Deadline('timeout')
  }

  /** A global C function written in JS (see PatternHost). */
  defineRaw (name: string, fn: (L: number) => number): void {
    const pointer = this.x.addFunction(fn, 'ii')
    this.x._lua_pushcclosure(this.L, pointer, 0)
    this.withString(name, (p) => this.x._lua_setglobal(this.L, p))
  }

  /** Runs sandbox code (no deadline to speak of: it is ours); throws if it fails. */
  install (source: string): void {
    const outcome = this.run(Buffer.from(source), 5000)
    if (!outcome.ok) throw new Error(`the sandbox did not build: ${outcome.message}`)
  }

  /** A JS function callable from Lua as global `name`: it gets the arguments' text, answers nothing. */
  defineGlobal (name: string, fn: (args: string[]) => void): void {
    const x = this.x
    this.defineRaw(name, (L: number) => {
      const args: string[] = []
      for (let i = 1, n = x._lua_gettop(L); i <= n; i++) {
        // luaL_tolstring may run a __tostring metamethod; its error is a Lua error (a longjmp through here)
        const text = x._luaL_tolstring(L, i, this.lengthOut)
        args.push(this.bytesAt(text, this.readLength()).toString('utf8'))
        x._lua_settop(L, -2)
      }
      fn(args)
      return 0
    })
  }

  /**
   * Runs `source` as a chunk (text only: a precompiled chunk is refused) and
   * answers what it returns. The chunk runs under the deadline of a call.
   */
  run (source: Buffer, timeoutMs: number): CallOutcome {
    return this.guarded(timeoutMs, () => {
      if (this.loadChunk(source, this.options.chunkName) !== LUA_OK) return { ok: false, kind: 'error', message: this.errorText() }
      return this.pcall(0)
    })
  }

  /**
   * Keeps the value `source` answers (a chunk of the sandbox, run at once) in
   * the registry: its reference for `call`. Undefined when it is not a function.
   */
  reference (source: string, timeoutMs: number): number | undefined {
    return this.keep(timeoutMs, () => this.loadChunk(Buffer.from(source), '=sandbox') === LUA_OK ? 0 : undefined)
  }

  /** Calls the function kept at `ref` with `args`, under the deadline. */
  call (ref: number, args: readonly LuaArg[], timeoutMs: number): CallOutcome {
    return this.guarded(timeoutMs, () => {
      this.x._lua_rawgeti(this.L, LUA_REGISTRYINDEX, BigInt(ref))
      for (const arg of args) this.push(arg)
      return this.pcall(args.length)
    })
  }

  /** A global's function kept in the registry (through `getter`, a rawget: no metamethod runs), undefined when it is not one. */
  functionRef (getter: number, name: string, timeoutMs: number): number | undefined {
    return this.keep(timeoutMs, () => {
      this.x._lua_rawgeti(this.L, LUA_REGISTRYINDEX, BigInt(getter))
      this.push(name)
      return 1
    })
  }

  /** Frees the instance's Lua state (a dead one is only dropped: its state is not to be walked). */
  close (): void {
    if (this.dead) return
    this.dead = true
    this.deadline = performance.now() + 1000
    try {
      this.instance.global.close()
    } catch {
      // a __gc metamethod that ran past the deadline or failed: the instance is dropped all the same
    }
  }

  private loadChunk (source: Buffer, chunkName: string): number {
    return this.withBytes(source, (p, n) => this.withString(chunkName, (name) =>
      this.withString('t', (mode) => this.x._luaL_loadbufferx(this.L, p, n, name, mode))))
  }

  /**
   * `push` puts a function and its arguments on the stack and answers how many
   * arguments (undefined: it failed, the error on top); the function's first
   * answer is kept in the registry if it is a function. Throws on failure.
   */
  private keep (timeoutMs: number, push: () => number | undefined): number | undefined {
    let ref: number | undefined
    const outcome = this.guarded(timeoutMs, () => {
      const nargs = push()
      if (nargs === undefined || this.x._lua_pcallk(this.L, nargs, 1, 0, 0, 0) !== LUA_OK) return { ok: false, kind: 'error', message: this.errorText() }
      if (this.x._lua_type(this.L, -1) === LuaTypes.function) ref = this.x._luaL_ref(this.L, LUA_REGISTRYINDEX)
      return { ok: true, values: [] }
    })
    if (!outcome.ok) throw new Error(outcome.message)
    return ref
  }

  private guarded (timeoutMs: number, body: () => CallOutcome): CallOutcome {
    if (this.dead) return { ok: false, kind: 'crash', message: 'the VM is closed' }
    if (this.busy) return { ok: false, kind: 'error', message: 'the VM is busy (a call from inside a call)' }
    this.busy = true
    this.deadline = performance.now() + timeoutMs
    try {
      return body()
    } catch (err) {
      this.dead = true
      if (err instanceof Deadline) return { ok: false, kind: 'timeout', message: `ran past ${timeoutMs} ms` }
      return { ok: false, kind: 'crash', message: err instanceof Error ? err.message : String(err) }
    } finally {
      this.deadline = Infinity
      this.busy = false
      if (!this.dead) this.x._lua_settop(this.L, 0)
    }
  }

  private pcall (nargs: number): CallOutcome {
    const base = this.x._lua_gettop(this.L) - nargs - 1
    const status = this.x._lua_pcallk(this.L, nargs, LUA_MULTRET, 0, 0, 0)
    if (status !== LUA_OK) return { ok: false, kind: 'error', message: this.errorText() }
    const values: LuaValue[] = []
    const top = Math.min(this.x._lua_gettop(this.L), base + MAX_RESULTS)
    for (let i = base + 1; i <= top; i++) values.push(this.value(i))
    return { ok: true, values }
  }

  private value (index: number): LuaValue {
    const type = this.x._lua_type(this.L, index)
    switch (type) {
      case LuaTypes.nil: return null
      case LuaTypes.boolean: return this.x._lua_toboolean(this.L, index) !== 0
      case LuaTypes.number: return this.x._lua_tonumberx(this.L, index, 0)
      case LuaTypes.string: return this.bytesAt(this.x._lua_tolstring(this.L, index, this.lengthOut), this.readLength())
      default: return { type: TYPE_NAMES[type] ?? 'value' }
    }
  }

  /** The error object on top of the stack as text (not its __tostring: that would run outside protection). */
  private errorText (): string {
    const top = this.x._lua_gettop(this.L)
    if (top === 0) return 'unknown error'
    const type = this.x._lua_type(this.L, top)
    if (type === LuaTypes.string || type === LuaTypes.number) return this.value(top)?.toString() ?? 'unknown error'
    return `(error object is a ${TYPE_NAMES[type] ?? 'nil'} value)`
  }

  private push (arg: LuaArg): void {
    if (arg === undefined) this.x._lua_pushnil(this.L)
    else if (typeof arg === 'boolean') this.x._lua_pushboolean(this.L, arg ? 1 : 0)
    else if (typeof arg === 'number') this.x._lua_pushinteger(this.L, BigInt(Math.trunc(arg)))
    else this.withBytes(typeof arg === 'string' ? Buffer.from(arg) : arg, (p, n) => this.x._lua_pushlstring(this.L, p, n))
  }

  private readLength (): number {
    const h = this.x.HEAPU8
    const p = this.lengthOut
    return (h[p]! | (h[p + 1]! << 8) | (h[p + 2]! << 16) | (h[p + 3]! << 24)) >>> 0
  }

  private bytesAt (pointer: number, length: number): Buffer {
    // a copy: the module's memory may grow (and its buffer change) on the next call
    return Buffer.from(this.x.HEAPU8.subarray(pointer, pointer + length))
  }

  /** `bytes` copied into the module's memory for the time of `use`. */
  private withBytes<T> (bytes: Buffer, use: (pointer: number, length: number) => T): T {
    const own = bytes.length > SCRATCH_BYTES
    const pointer = own ? this.x._malloc(bytes.length) : this.scratch
    if (pointer === 0) throw new Error(`no memory for ${bytes.length} bytes`)
    try {
      this.x.HEAPU8.set(bytes, pointer)
      return use(pointer, bytes.length)
    } finally {
      if (own) this.x._free(pointer)
    }
  }

  /** A NUL-terminated copy of a short name (never the scratch buffer: names nest with it). */
  private withString<T> (text: string, use: (pointer: number) => T): T {
    const bytes = Buffer.from(`${text}\0`)
    const pointer = this.x._malloc(bytes.length)
    if (pointer === 0) throw new Error('no memory for a name')
    try {
      this.x.HEAPU8.set(bytes, pointer)
      return use(pointer)
    } finally {
      this.x._free(pointer)
    }
  }
}
