// The node's configuration at run time: typed values from the schema, where
// each came from, and a `change` event when a value is set while running
// (the management API and broker_ctl change settings through `set`).
import { EventEmitter } from 'node:events'
import { ConfigError, type ConfigLine } from './parse.js'
import type { ConfigOverrides } from './overrides.js'
import { isSettingKey, schema, type SettingKey, type SettingValue } from './schema.js'
import type { SettingKind } from './types.js'

export interface ConfigItem { key: SettingKey, value: string, datatype: string, app: string, kind: SettingKind, origin: string }

export class Config extends EventEmitter {
  readonly #values = new Map<SettingKey, unknown>()
  readonly #raw = new Map<SettingKey, { value: string, origin: string }>()
  /** <data_dir>/configs.override when loaded by `loadConfig` with a root: run-time changes are kept there */
  overrides: ConfigOverrides | undefined

  /** Applies lines in order (later lines win); throws ConfigError naming the origin of a bad one. */
  constructor (lines: ConfigLine[] = []) {
    super()
    for (const key of Object.keys(schema) as SettingKey[]) {
      this.#store(key, schema[key].default, 'default')
    }
    for (const line of lines) this.#apply(line)
  }

  get<K extends SettingKey> (key: K): SettingValue<K> {
    return this.#values.get(key) as SettingValue<K>
  }

  /** Where the current value came from: `file:line`, `env NAME`, `--set …`, `runtime` or `default` (overrides: `<data_dir>/configs.override…`). */
  origin (key: SettingKey): string {
    return this.#raw.get(key)?.origin ?? 'default'
  }

  /** Changes one setting while running; emits `change` (key, value). */
  set (key: string, value: string, origin = 'runtime'): void {
    const line = { key, value, origin }
    this.#apply(line)
    this.emit('change', key, this.#values.get(key as SettingKey))
  }

  items (): ConfigItem[] {
    return [...this.#raw].map(([key, { value, origin }]) => ({
      key, value, datatype: schema[key].datatype, app: schema[key].app, kind: schema[key].kind, origin
    }))
  }

  /** The typed value `value` would give `key`; throws ConfigError naming `origin` for an unknown key or a bad value. */
  parse (key: string, value: string, origin: string): unknown {
    if (!isSettingKey(key)) throw new ConfigError(origin, `${key}: unknown setting`)
    try {
      return schema[key].parse(value)
    } catch (err) {
      throw new ConfigError(origin, `${key}: ${(err as Error).message}`)
    }
  }

  #apply ({ key, value, origin }: ConfigLine): void {
    this.#store(key as SettingKey, value, origin)
  }

  #store (key: SettingKey, value: string, origin: string): void {
    this.#values.set(key, this.parse(key, value, origin))
    this.#raw.set(key, { value, origin })
  }
}
