// The node's configuration at run time: typed values from the schema, where
// each came from, and a `change` event when a value is set while running
// (the management API and broker_ctl change settings through `set`).
import { EventEmitter } from 'node:events'
import { ConfigError, type ConfigLine } from './parse.js'
import type { ConfigOverrides } from './overrides.js'
import { LISTENER_TYPES, listenerKeyParts, listenerPrefix, listenerSchema, unknownListenerKey, type ListenerType } from './listener-settings.js'
import { canonicalKey, movedSetting, schema, settingOf, type AnyKey, type Canonical, type SettingValue } from './schema.js'
import type { SettingKind } from './types.js'
import { validateValue } from './validation.js'

/** `key`: a schema key or a key of a listener named in the configuration (`listener.tcp.internal…`). */
export interface ConfigItem { key: string, value: string, datatype: string, app: string, kind: SettingKind, origin: string }

/** A listener the configuration names (open unless its address is `off`). */
export interface ListenerEntry { type: ListenerType, name: string }

export class Config extends EventEmitter {
  readonly #values = new Map<string, unknown>()
  readonly #raw = new Map<string, { value: string, origin: string }>()
  /** <data_dir>/configs.override when loaded by `loadConfig` with a root: run-time changes are kept there */
  overrides: ConfigOverrides | undefined

  /** Applies lines in order (later lines win); throws ConfigError naming the origin of a bad one. */
  constructor (lines: ConfigLine[] = []) {
    super()
    this.#storeDefaults(schema)
    for (const { key, value, origin } of lines) this.#store(key, value, origin)
  }

  get<K extends AnyKey> (key: K): SettingValue<Canonical<K>> {
    return this.#values.get(canonicalKey(key)) as SettingValue<Canonical<K>>
  }

  /** The typed value of any key, e.g. of a listener named in the configuration; undefined when it has none. */
  value (key: string): unknown {
    return this.#values.get(canonicalKey(key))
  }

  /** Where the current value came from: `file:line`, `env NAME`, `--set …`, `runtime` or `default` (overrides: `<data_dir>/configs.override…`). */
  origin (key: AnyKey | (string & {})): string {
    return this.#raw.get(canonicalKey(key))?.origin ?? 'default'
  }

  /** The listeners the configuration names, by type (tcp, ssl, ws, wss), `external` first, then as first named. */
  mqttListeners (): ListenerEntry[] {
    const named = [...this.#raw.keys()].map(listenerKeyParts).filter((p) => p !== undefined && p.key === '')
    return LISTENER_TYPES.flatMap((type) => named.filter((p) => p!.type === type)
      .map((p) => p!.name).sort((a, b) => Number(b === 'external') - Number(a === 'external'))
      .map((name) => ({ type, name })))
  }

  /** Changes one setting while running; emits `change` (key, value). */
  set (key: string, value: string, origin = 'runtime'): void {
    this.#store(key, value, origin)
    const name = canonicalKey(key)
    this.emit('change', name, this.#values.get(name))
  }

  items (): ConfigItem[] {
    return [...this.#raw].map(([key, { value, origin }]) => {
      const { datatype, app, kind } = settingOf(key)!
      return { key, value, datatype, app, kind, origin }
    })
  }

  /** The typed value `value` would give `key`; throws ConfigError naming `origin` for an unknown key or a bad value. */
  parse (key: string, value: string, origin: string): unknown {
    const setting = settingOf(canonicalKey(key))
    if (setting === undefined) throw new ConfigError(origin, `${key}: ${unknownListenerKey(key) ?? movedSetting(key) ?? 'unknown setting'}`)
    try {
      return validateValue(setting.schema, value)
    } catch (err) {
      throw new ConfigError(origin, `${key}: ${(err as Error).message}`)
    }
  }

  /** `key` as written (an error names it so); kept under the schema's name. */
  #store (key: string, value: string, origin: string): void {
    const parsed = this.parse(key, value, origin)
    const name = canonicalKey(key)
    this.#nameListener(name)
    this.#values.set(name, parsed)
    this.#raw.set(name, { value, origin })
  }

  /** The first key of a listener not yet known gives it every key of its type, at their defaults (its address `off`). */
  #nameListener (key: string): void {
    const parts = listenerKeyParts(key)
    if (parts === undefined || this.#raw.has(listenerPrefix(parts.type, parts.name))) return
    this.#storeDefaults(listenerSchema(parts.type, parts.name))
  }

  #storeDefaults (settings: Record<string, { default: string }>): void {
    for (const [key, setting] of Object.entries(settings)) {
      const parsed = this.parse(key, setting.default, 'default')
      this.#values.set(key, parsed)
      this.#raw.set(key, { value: setting.default, origin: 'default' })
    }
  }
}
