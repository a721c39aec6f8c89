// What kind of value each key of a plugin's schema takes, for the settings
// editors (the management API's plugin_configs, the dashboard): read from the
// joi schema the host validates with, so it cannot drift from what is accepted.
import type Joi from 'joi'

export interface SettingType {
  /** §2.14's words where they apply: `boolean`, `integer`, `number`, `enum`, `string`, or the key's own `datatype` meta */
  datatype: string
  /** an `enum`'s accepted values */
  values?: string[]
}

/** What joi's `describe()` says of one key, as far as the settings' types need. */
export interface Described {
  type?: string
  flags?: { only?: boolean }
  allow?: unknown[]
  rules?: Array<{ name: string }>
  metas?: Array<{ datatype?: unknown }>
}

/** The key's own `.meta({ datatype })` label (§2.14's words), when it has one. */
export function datatypeMeta (d: Described): string | undefined {
  const datatype = d.metas?.find((m) => typeof m.datatype === 'string')?.datatype
  return typeof datatype === 'string' ? datatype : undefined
}

function typeOf (d: Described): SettingType {
  const values = d.flags?.only === true && d.allow !== undefined ? d.allow.map(String) : undefined
  const meta = datatypeMeta(d)
  const datatype = meta !== undefined
    ? meta
    : values !== undefined ? 'enum' : d.type === 'number' ? (d.rules?.some((r) => r.name === 'integer') === true ? 'integer' : 'number') : d.type === 'boolean' ? 'boolean' : 'string'
  return values === undefined ? { datatype } : { datatype, values }
}

/** The type of each key the schema names (keys matched only by a pattern have none). */
export function settingTypes (schema: Joi.ObjectSchema): Map<string, SettingType> {
  const keys = (schema.describe().keys ?? {}) as Record<string, Described>
  return new Map(Object.entries(keys).map(([key, described]) => [key, typeOf(described)]))
}
