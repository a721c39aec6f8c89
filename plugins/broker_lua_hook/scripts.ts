// The scripts of one plugin load: the files `<name>.lua` of the script
// folder (`<node.data_dir>/script`), each in a VM of its own. A file
// `<name>.lua.x` is a disabled script (EMQ X's way): kept, never loaded.
// Operations on the set run one at a time. A script name is a file name in
// that folder, with or without `.lua`: nothing with a path separator, and no
// name starting with a dot, so no name reaches outside the folder.
import { readdir, readFile, rename, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { HOOK_FUNCTIONS, Script, type HookFunction, type ScriptEnv, type ScriptStats } from './script.js'

/** A script file larger than this is refused. */
export const MAX_SCRIPT_BYTES = 1024 * 1024
const NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}$/

export class ScriptError extends Error {
  constructor (message: string, readonly code: 'bad_name' | 'not_found' | 'state' | 'load_failed') {
    super(message)
    this.name = 'ScriptError'
  }
}

export interface ScriptRow {
  name: string
  file: string
  /** loaded: running; restarting: paused after a timeout; disabled: a `.lua.x` file; failed: its last load (or restart) failed */
  status: 'loaded' | 'restarting' | 'not_loaded' | 'disabled' | 'failed'
  hooks: HookFunction[]
  stats?: ScriptStats
  memory?: number
  error?: string
}

/** `x`, `x.lua` → `x`; anything that is not a plain file name is refused. */
export function scriptName (raw: string): string {
  const name = raw.endsWith('.lua') ? raw.slice(0, -'.lua'.length) : raw
  if (!NAME.test(name)) throw new ScriptError(`bad script name ${JSON.stringify(raw)}: a file name in the script folder (letters, digits, _ . -, not starting with a dot)`, 'bad_name')
  return name
}

export class ScriptSet {
  private readonly loaded = new Map<string, Script>()
  private readonly failures = new Map<string, string>()
  /** per hook function, the scripts that handle it, by name */
  private handlers = new Map<HookFunction, Script[]>()
  private queue: Promise<unknown> = Promise.resolve()
  private closed = false

  constructor (readonly dir: string, private readonly env: (name: string) => ScriptEnv) {}

  /** The scripts that handle `fn`, in name order (an empty list costs nothing). */
  scriptsFor (fn: HookFunction): readonly Script[] {
    return this.handlers.get(fn) ?? []
  }

  /** Loads every `<name>.lua` of the folder, in name order; a script that fails is logged by the caller's `onFailure`. */
  async loadAll (onFailure: (name: string, why: string) => void): Promise<void> {
    await this.serial(async () => {
      let names: string[]
      try {
        names = (await this.files()).enabled
      } catch (err) {
        onFailure(this.dir, (err as Error).message)
        return
      }
      for (const name of names) {
        try {
          await this.loadOne(name)
        } catch (err) {
          onFailure(name, (err as Error).message)
        }
      }
    })
  }

  async load (raw: string): Promise<Script> {
    const name = scriptName(raw)
    return await this.serial(async () => {
      if (this.loaded.has(name)) throw new ScriptError(`${name}.lua is loaded already (reload it to read it again)`, 'state')
      return await this.loadOne(name)
    })
  }

  async unload (raw: string): Promise<void> {
    const name = scriptName(raw)
    await this.serial(async () => {
      if (!this.loaded.has(name)) throw new ScriptError(`${name}.lua is not loaded`, 'state')
      this.unloadOne(name)
    })
  }

  async reload (raw: string): Promise<Script> {
    const name = scriptName(raw)
    return await this.serial(async () => {
      // read and run the new text first: a script that does not load leaves the old one running
      const script = await this.loadOne(name, false)
      this.unloadOne(name)
      this.add(script)
      return script
    })
  }

  /** `<name>.lua.x` → `<name>.lua`, then loads it. */
  async enable (raw: string): Promise<Script> {
    const name = scriptName(raw)
    return await this.serial(async () => {
      const file = this.file(name)
      if (await exists(file)) throw new ScriptError(`${name}.lua is enabled already`, 'state')
      if (!await exists(`${file}.x`)) throw new ScriptError(`no disabled script ${name}.lua.x in ${this.dir}`, 'not_found')
      await rename(`${file}.x`, file)
      return await this.loadOne(name)
    })
  }

  /** Unloads the script and renames `<name>.lua` → `<name>.lua.x`, so it is not loaded at the next start. */
  async disable (raw: string): Promise<void> {
    const name = scriptName(raw)
    await this.serial(async () => {
      const file = this.file(name)
      if (!await exists(file)) throw new ScriptError(`no script ${name}.lua in ${this.dir}`, 'not_found')
      if (this.loaded.has(name)) this.unloadOne(name)
      await rename(file, `${file}.x`)
      this.failures.delete(name)
    })
  }

  /** Every script file of the folder and every loaded script, in name order. */
  async list (): Promise<ScriptRow[]> {
    const { enabled, disabled } = await this.files()
    const names = [...new Set([...enabled, ...disabled, ...this.loaded.keys()])].sort()
    return names.map((name): ScriptRow => {
      const script = this.loaded.get(name)
      if (script !== undefined) {
        const status = script.running ? 'loaded' : script.failure !== undefined ? 'failed' : 'restarting'
        return { name, file: `${name}.lua`, status, hooks: [...script.hooks], stats: { ...script.stats }, memory: script.memoryUsed, ...(script.failure !== undefined ? { error: script.failure } : {}) }
      }
      if (!enabled.includes(name)) return { name, file: `${name}.lua.x`, status: 'disabled', hooks: [] }
      const error = this.failures.get(name)
      return error === undefined ? { name, file: `${name}.lua`, status: 'not_loaded', hooks: [] } : { name, file: `${name}.lua`, status: 'failed', hooks: [], error }
    })
  }

  /** Applies a new memory limit to every VM. */
  setMemoryMax (bytes: number): void {
    for (const script of this.loaded.values()) script.setMemoryMax(bytes)
  }

  /** Frees every VM; later operations are refused. */
  close (): void {
    this.closed = true
    for (const name of [...this.loaded.keys()]) this.unloadOne(name)
  }

  private async loadOne (name: string, register = true): Promise<Script> {
    const file = this.file(name)
    let source: Buffer
    try {
      const info = await stat(file)
      if (!info.isFile()) throw new ScriptError(`${file} is not a file`, 'not_found')
      if (info.size > MAX_SCRIPT_BYTES) throw new ScriptError(`${file} is larger than ${MAX_SCRIPT_BYTES} bytes`, 'load_failed')
      source = await readFile(file)
    } catch (err) {
      if (err instanceof ScriptError) throw this.failed(name, err)
      const code = (err as NodeJS.ErrnoException).code
      throw this.failed(name, new ScriptError(code === 'ENOENT' ? `no script ${name}.lua in ${this.dir}` : `${file}: ${(err as Error).message}`, code === 'ENOENT' ? 'not_found' : 'load_failed'))
    }
    let script: Script
    try {
      script = await Script.load(name, source, this.env(name))
    } catch (err) {
      throw this.failed(name, new ScriptError(`${name}.lua: ${(err as Error).message}`, 'load_failed'))
    }
    if (this.closed) {
      script.close()
      throw new ScriptError('the plugin is unloading', 'state')
    }
    this.failures.delete(name)
    if (register) this.add(script)
    return script
  }

  private failed (name: string, err: ScriptError): ScriptError {
    if (err.code !== 'not_found') this.failures.set(name, err.message)
    return err
  }

  private add (script: Script): void {
    this.loaded.set(script.name, script)
    this.index()
  }

  private unloadOne (name: string): void {
    this.loaded.get(name)?.close()
    this.loaded.delete(name)
    this.index()
  }

  private index (): void {
    const sorted = [...this.loaded.values()].sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
    const handlers = new Map<HookFunction, Script[]>()
    for (const fn of HOOK_FUNCTIONS) {
      const scripts = sorted.filter((s) => s.hooks.includes(fn))
      if (scripts.length > 0) handlers.set(fn, scripts)
    }
    this.handlers = handlers
  }

  private file (name: string): string {
    return join(this.dir, `${name}.lua`)
  }

  private async files (): Promise<{ enabled: string[], disabled: string[] }> {
    let entries: string[]
    try {
      entries = await readdir(this.dir)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { enabled: [], disabled: [] }
      throw err
    }
    const named = (suffix: string): string[] => entries
      .filter((f) => f.endsWith(suffix) && NAME.test(f.slice(0, -suffix.length)))
      .map((f) => f.slice(0, -suffix.length))
      .sort()
    return { enabled: named('.lua'), disabled: named('.lua.x') }
  }

  private async serial<T> (op: () => Promise<T>): Promise<T> {
    if (this.closed) throw new ScriptError('the plugin is unloading', 'state')
    const run = this.queue.then(op)
    this.queue = run.catch(() => undefined)
    return await run
  }
}

async function exists (file: string): Promise<boolean> {
  try {
    await stat(file)
    return true
  } catch {
    return false
  }
}
