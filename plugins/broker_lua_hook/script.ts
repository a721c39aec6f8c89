// One loaded script: its VM, the hook functions its register_hook() named,
// and what its calls came to. A call that fails is skipped (the hook goes on
// as if the script were not there) and logged, rate-limited. A call that runs
// past the timeout kills the VM; the script is then paused and built again
// from the same source: at once after the first time, then after 1 s, 2 s, 4 s
// … (at most a minute) while its calls keep timing out, so a script that loops
// on every message does not cost every message the full timeout.
import type { LimitedLog } from '../../lib/plugin-kit/index.js'
import { LuaVm, type LuaArg, type LuaValue } from './lua-vm.js'

/** The hook functions of EMQ X's lua_hook, as a script names them in register_hook(). */
export const HOOK_FUNCTIONS = Object.freeze([
  'on_message_publish', 'on_message_delivered', 'on_message_acked',
  'on_client_connected', 'on_client_disconnected', 'on_client_subscribe', 'on_client_unsubscribe',
  'on_session_subscribed', 'on_session_unsubscribed'
] as const)
export type HookFunction = typeof HOOK_FUNCTIONS[number]
const isHookFunction = (name: string): name is HookFunction => (HOOK_FUNCTIONS as readonly string[]).includes(name)

/** A global read without running metamethods, kept in the registry before the script runs. */
const GETTER = 'local rawget, G = rawget, _G return function (name) return rawget(G, name) end'

const MAX_PAUSE_MS = 60_000

export interface ScriptStats { calls: number, errors: number, timeouts: number, skipped: number }

/** What a script needs of its owner; the limits are read at each call (live settings). */
export interface ScriptEnv {
  timeoutMs: () => number
  memoryMax: () => number
  /** rate-limited per script by the owner */
  warn: LimitedLog
  print: LimitedLog
  /** a timer the owner cancels at unload */
  later: (run: () => void, ms: number) => { cancel: () => void }
  /** a call was skipped: a Lua error or an answer the hook cannot use (`error`), past the timeout, or the VM failed */
  onFailure?: (kind: 'error' | 'timeout' | 'crash') => void
}

interface Built { vm: LuaVm, functions: Map<HookFunction, number> }

export class Script {
  readonly stats: ScriptStats = { calls: 0, errors: 0, timeouts: 0, skipped: 0 }
  private built: Built | undefined
  /** why a restart failed: the script stays stopped until it is reloaded */
  private stopped: string | undefined
  private kills = 0
  private closed = false
  private pause: { cancel: () => void } | undefined

  private constructor (readonly name: string, private readonly source: Buffer, readonly hooks: readonly HookFunction[], built: Built, private readonly env: ScriptEnv) {
    this.built = built
  }

  /** Runs the script and its register_hook(); throws saying why it cannot be loaded. */
  static async load (name: string, source: Buffer, env: ScriptEnv): Promise<Script> {
    const { built, hooks } = await build(name, source, env)
    return new Script(name, source, hooks, built, env)
  }

  get running (): boolean { return this.built !== undefined }
  /** set when a restart failed */
  get failure (): string | undefined { return this.stopped }
  get memoryUsed (): number { return this.built?.vm.memoryUsed ?? 0 }

  /** Applies a new memory limit to the VM (and to the ones built later). */
  setMemoryMax (bytes: number): void { this.built?.vm.setMemoryMax(bytes) }

  /** The script's answers, or undefined when the call was skipped (paused, failed, timed out). */
  call (fn: HookFunction, args: readonly LuaArg[]): LuaValue[] | undefined {
    const built = this.built
    const ref = built?.functions.get(fn)
    if (built === undefined || ref === undefined) {
      this.stats.skipped++
      return undefined
    }
    this.stats.calls++
    const outcome = built.vm.call(ref, args, this.env.timeoutMs())
    if (outcome.ok) {
      this.kills = 0
      return outcome.values
    }
    this.env.onFailure?.(outcome.kind)
    if (outcome.kind === 'error') {
      this.stats.errors++
      this.env.warn({ script: this.name, function: fn, error: outcome.message }, 'lua script failed; call skipped')
      return undefined
    }
    if (outcome.kind === 'timeout') this.stats.timeouts++
    else this.stats.errors++
    this.killed(fn, outcome.kind, outcome.message)
    return undefined
  }

  /** An answer the hook cannot use: counted as an error and logged; the call is skipped. */
  refuse (fn: HookFunction, why: string): void {
    this.stats.errors++
    this.env.onFailure?.('error')
    this.env.warn({ script: this.name, function: fn, error: why }, 'lua script answered what the hook cannot use; call skipped')
  }

  /** Frees the VM; a pending rebuild is cancelled. */
  close (): void {
    this.closed = true
    this.pause?.cancel()
    this.built?.vm.close()
    this.built = undefined
  }

  private killed (fn: HookFunction, kind: 'timeout' | 'crash', message: string): void {
    this.built = undefined
    this.kills++
    const pauseMs = this.kills === 1 ? 0 : Math.min(1000 * 2 ** (this.kills - 2), MAX_PAUSE_MS)
    this.env.warn({ script: this.name, function: fn, error: message, pauseMs },
      kind === 'timeout' ? 'lua script ran past lua.hook.timeout; call skipped, script restarted' : 'lua script VM failed; call skipped, script restarted')
    this.pause = this.env.later(() => { this.rebuild() }, pauseMs)
  }

  private rebuild (): void {
    this.pause = undefined
    build(this.name, this.source, this.env).then(({ built }) => {
      if (this.closed) built.vm.close()
      else this.built = built
    }, (err: Error) => {
      // the same source loaded before; it can fail now only in its top-level code (e.g. a time-dependent loop)
      this.stopped = `restart failed: ${err.message}`
      this.env.warn({ script: this.name, error: err.message }, 'lua script could not be restarted; it stays stopped until reloaded')
    })
  }
}

async function build (name: string, source: Buffer, env: ScriptEnv): Promise<{ built: Built, hooks: HookFunction[] }> {
  const vm = await LuaVm.create({ chunkName: `@${name}.lua`, memoryMax: env.memoryMax(), print: (line) => env.print({ script: name, line }, 'lua script print') })
  try {
    const timeout = env.timeoutMs()
    const getter = vm.reference(GETTER, timeout)!
    const ran = vm.run(source, timeout)
    if (!ran.ok) throw new Error(ran.kind === 'timeout' ? `its top-level code ran past ${timeout} ms` : ran.message)
    const register = vm.functionRef(getter, 'register_hook', timeout)
    if (register === undefined) throw new Error('it defines no function register_hook()')
    const answer = vm.call(register, [], timeout)
    if (!answer.ok) throw new Error(`register_hook(): ${answer.kind === 'timeout' ? `ran past ${timeout} ms` : answer.message}`)
    const hooks: HookFunction[] = []
    const functions = new Map<HookFunction, number>()
    for (const value of answer.values) {
      const hook = Buffer.isBuffer(value) ? value.toString('utf8') : undefined
      if (hook === undefined || !isHookFunction(hook)) {
        env.warn({ script: name, hook: hook ?? describe(value) }, 'register_hook() names an unknown hook; discarded')
        continue
      }
      if (functions.has(hook)) continue
      const ref = vm.functionRef(getter, hook, timeout)
      if (ref === undefined) {
        env.warn({ script: name, hook }, 'register_hook() names a function the script does not define; discarded')
        continue
      }
      functions.set(hook, ref)
      hooks.push(hook)
    }
    return { built: { vm, functions }, hooks }
  } catch (err) {
    vm.close()
    throw err
  }
}

function describe (value: LuaValue): string {
  if (value === null) return 'nil'
  if (typeof value === 'object' && !Buffer.isBuffer(value)) return `a ${value.type}`
  return String(value)
}
