// Run-time configuration overrides: a setting changed while the node runs
// (management API, broker_ctl) is kept in <data_dir>/configs.override, in
// etc/broker.conf's `key = value` format, so it survives a restart while
// etc/broker.conf stays as the operator wrote it. At start the order is
// default < etc/broker.conf < configs.override < BROKER_* env < --set: the
// environment and --set are the operator's explicit word for this start, so
// they win over a stored override, and the log says so.
import { closeSync, fsyncSync, openSync, renameSync, rmSync, statSync, writeSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { isDeepStrictEqual } from 'node:util'
import type { Logger } from '../log.js'
import { ConfigError, parseConfigText, type ConfigLine } from './parse.js'
import { canonicalKey, settingOf, type SettingKey } from './schema.js'
import type { Config } from './store.js'

export const OVERRIDE_FILE = 'configs.override'

/** The overrides live in the data directory, so it cannot be one of them. */
const NOT_OVERRIDABLE = new Set(['node.data_dir'])

const HEADER = [
  '# Settings changed at run time (management API, broker_ctl), written by the broker.',
  '# They apply over etc/broker.conf; BROKER_* environment variables and --set apply over them.',
  '# Edit only while the node is stopped; setting a value back to the start-time one removes its line.'
].join('\n') + '\n'

/** The override file could not be written; the setting was left as it was. */
export class OverrideWriteError extends Error {
  constructor (file: string, cause: unknown) {
    super(`${file}: cannot write the runtime overrides (${(cause as NodeJS.ErrnoException).code ?? (cause as Error).message})`, { cause })
    this.name = 'OverrideWriteError'
  }
}

/** A stored override that an environment variable or --set replaced at this start. */
export interface ShadowedOverride { key: string, value: string, origin: string, by: string }

/** A value as a conf line can hold it: quoted when spaces at its ends or a `#` would be lost; undefined when it cannot be written. */
export function confValue (value: string): string | undefined {
  if (/[\r\n]/.test(value)) return undefined
  if (value === value.trim() && !value.includes('#') && !value.startsWith('"')) return value
  return value.includes('"') ? undefined : `"${value}"`
}

/** The override file's lines; none when it does not exist yet. */
export async function readOverrideLines (file: string): Promise<ConfigLine[]> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw new ConfigError(file, `cannot read the runtime overrides (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`)
  }
  const lines = parseConfigText(text, file)
  const bad = lines.find((line) => NOT_OVERRIDABLE.has(line.key))
  if (bad !== undefined) throw new ConfigError(bad.origin, `${bad.key}: cannot be a runtime override`)
  return lines
}

export class ConfigOverrides {
  /** key → value, in the order the keys were first overridden */
  readonly #values = new Map<string, string>()

  /**
   * `base` holds the start-time values without the overrides (file, env,
   * --set); `startKeys` are the keys env or --set gave at this start.
   */
  constructor (readonly file: string, readonly lines: readonly ConfigLine[], private readonly base: Config, private readonly startKeys: ReadonlySet<string>) {
    for (const line of lines) this.#values.set(canonicalKey(line.key), line.value)
  }

  /** Stored overrides that env or --set replaced at this start (the start-time value is in force). */
  shadowed (): ShadowedOverride[] {
    const last = new Map(this.lines.map((line) => [canonicalKey(line.key), line]))
    return [...last].filter(([key]) => this.startKeys.has(key)).map(([, line]) => line)
      .map(({ key, value, origin }) => ({ key, value, origin, by: this.base.origin(key as SettingKey) }))
  }

  /** The keys stored now, with their values. */
  entries (): Array<[string, string]> {
    return [...this.#values]
  }

  /**
   * Changes `key` now and keeps it: the file is rewritten in one step before
   * this returns. A value equal to the start-time one (file, env, --set or
   * default) removes the override and the origin goes back to that source.
   * Throws ConfigError for a bad value or one the file cannot hold,
   * OverrideWriteError when the file cannot be written (the setting is then
   * left as it was).
   */
  change (config: Config, written: string, value: string, origin: string): void {
    const { values, atStart, key } = this.#with(config, written, value, origin)
    const previous = config.items().find((item) => item.key === key)!
    config.set(key, value, atStart ? this.base.origin(key as SettingKey) : `${this.file} (${origin})`)
    try {
      this.#write(values)
    } catch (err) {
      config.set(key, previous.value, previous.origin)
      throw err
    }
  }

  /** Keeps `key = value` for the next start only (a `restart` setting); the running value stays. */
  storeForNextStart (config: Config, key: string, value: string, origin: string): void {
    this.#write(this.#with(config, key, value, origin).values)
  }

  #with (config: Config, written: string, value: string, origin: string): { values: Map<string, string>, atStart: boolean, key: string } {
    const parsed = config.parse(written, value, origin)
    const key = canonicalKey(written)
    if (NOT_OVERRIDABLE.has(key)) throw new ConfigError(origin, `${key}: cannot be changed at run time`)
    if (confValue(value) === undefined) throw new ConfigError(origin, `${key}: the value cannot be written to ${this.file}`)
    const atStart = isDeepStrictEqual(parsed, this.base.get(key as SettingKey))
    const values = new Map(this.#values)
    if (atStart) values.delete(key)
    else values.set(key, value)
    return { values, atStart, key }
  }

  #write (values: Map<string, string>): void {
    try {
      writeOverrides(this.file, values)
    } catch (err) {
      throw new OverrideWriteError(this.file, err)
    }
    this.#values.clear()
    for (const [k, v] of values) this.#values.set(k, v)
  }
}

/** A change refused because of the setting's kind (lib/config/types.ts). */
export class SettingKindError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'SettingKindError'
  }
}

/**
 * Changes a setting at run time: kept in the overrides when the config has
 * them, else for this run only. A `restart` setting is refused unless
 * `nextStart`, which stores it for the next start without applying it; a
 * `fixed` one is always refused.
 */
export function changeSetting (config: Config, key: string, value: string, origin: string, nextStart = false): void {
  config.parse(key, value, origin)
  const kind = settingOf(canonicalKey(key))!.kind
  if (kind === 'fixed') throw new SettingKindError(`${key} is fixed: it cannot change while the node runs (set it in etc/broker.conf)`)
  if (kind === 'restart') {
    if (!nextStart) throw new SettingKindError(`${key} takes effect at the next start (kind restart): ask for next_start to store it for then`)
    if (config.overrides === undefined) throw new SettingKindError(`${key}: this node keeps no runtime overrides to store it in`)
    config.overrides.storeForNextStart(config, key, value, origin)
    return
  }
  if (config.overrides === undefined) config.set(key, value, origin)
  else config.overrides.change(config, key, value, origin)
}

/** Says at start which stored overrides an environment variable or --set replaced. */
export function logShadowedOverrides (config: Config, logger: Logger): void {
  for (const { key, value, origin, by } of config.overrides?.shadowed() ?? []) {
    logger.warn({ key, override: value, overrideAt: origin, inForce: by }, `runtime override of ${key} not applied: ${by} sets it at start`)
  }
}

/** Rewrites the file in one step (temporary file beside it, fsync, rename); an empty set removes it. */
function writeOverrides (file: string, values: ReadonlyMap<string, string>): void {
  if (values.size === 0) {
    rmSync(file, { force: true })
    return
  }
  const text = HEADER + [...values].map(([key, value]) => `${key} = ${confValue(value)!}\n`).join('')
  const temporary = `${file}.${process.pid}.tmp`
  let mode = 0o640
  try {
    mode = statSync(file).mode & 0o777
  } catch {
    // a new file
  }
  try {
    const fd = openSync(temporary, 'w', mode)
    try {
      writeSync(fd, text)
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    renameSync(temporary, file)
  } catch (err) {
    rmSync(temporary, { force: true })
    throw err
  }
}
