// Value types of configuration settings, each a joi schema (the one validator
// of the core and the plugins' confs, validation.ts): joi's own types where
// they fit (integers, text, enums, switches), joi custom types for EMQ X's
// value syntaxes (durations, sizes, listen addresses, rates). A refused value
// says why in validation.ts's words; the caller prefixes `file:line: key:`.
import Joi from 'joi'

export type Datatype = 'string' | 'integer' | 'enum' | 'duration' | 'integer, duration' | 'bytesize'

/**
 * When a change made while the node runs takes effect: `live` at once (new
 * connections at least), `restart` at the next start (refused at run time
 * unless stored for then), `fixed` never at run time.
 */
export type SettingKind = 'live' | 'restart' | 'fixed'

export interface Setting<T> {
  /** the §2.14 `datatpye` label shown by the management API */
  datatype: Datatype
  kind: SettingKind
  default: string
  /** converts the conf text to the value (validation.ts validates with it) */
  schema: Joi.Schema<T>
  /** the application that owns the item (§2.14 `app`) */
  app: string
}

export interface ListenAddress { host: string, port: number }

/** A joi custom type for one of EMQ X's value syntaxes: `parse` takes the conf text, returns the value or throws why. */
export function syntax<T> (parse: (raw: string) => T): Joi.AnySchema<T> {
  return Joi.any().custom((raw: unknown) => parse(String(raw)))
}

export function integer (def: number, min = 0, max = Number.MAX_SAFE_INTEGER, app = 'broker'): Setting<number> {
  return {
    datatype: 'integer',
    kind: 'live',
    default: String(def),
    app,
    schema: Joi.number().integer().min(min).max(max)
  }
}

export function string (def: string, app = 'broker'): Setting<string> {
  return { datatype: 'string', kind: 'live', default: def, app, schema: Joi.string().allow('') }
}

export function choice<const C extends readonly string[]> (choices: C, def: C[number], app = 'broker'): Setting<C[number]> {
  return {
    datatype: 'enum',
    kind: 'live',
    default: def,
    app,
    schema: Joi.string().valid(...choices)
  }
}


export function flag (def: boolean, app = 'broker'): Setting<boolean> {
  return {
    datatype: 'enum',
    kind: 'live',
    default: def ? 'true' : 'false',
    app,
    schema: Joi.boolean().truthy('on', 'yes', 'enable').falsy('off', 'no', 'disable')
  }
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }

/** Durations are written `5m`, `30s`, `2h`, or a bare number of seconds; the value is milliseconds. */
export function parseDuration (raw: string): number {
  const m = /^(\d+)(ms|s|m|h|d|w)?$/.exec(raw)
  if (!m) throw new Error(`"${raw}" is not a duration (e.g. 30s, 5m, 2h, or seconds)`)
  return Number(m[1]) * DURATION_UNITS[m[2] ?? 's']
}

/** `datatype`: the §2.14 label, `integer, duration` for a setting EMQ X lists that way. */
export function duration (def: string, app = 'broker', datatype: Extract<Datatype, 'duration' | 'integer, duration'> = 'duration'): Setting<number> {
  return { datatype, kind: 'live', default: def, app, schema: syntax(parseDuration) }
}

const SIZE_UNITS: Record<string, number> = { '': 1, B: 1, KB: 1024, MB: 1024 ** 2, GB: 1024 ** 3 }

/** Sizes are written `1MB`, `64KB`, or a bare number of bytes. */
export function parseBytesize (raw: string): number {
  const m = /^(\d+)\s*(B|KB|MB|GB)?$/i.exec(raw)
  if (!m) throw new Error(`"${raw}" is not a size (e.g. 1MB, 64KB, or bytes)`)
  return Number(m[1]) * SIZE_UNITS[(m[2] ?? '').toUpperCase()]
}

export function bytesize (def: string, app = 'broker'): Setting<number> {
  return { datatype: 'bytesize', kind: 'live', default: def, app, schema: syntax(parseBytesize) }
}

/** `off`, a port (`1883`), or `address:port` (`0.0.0.0:1883`, `[::1]:1883`). */
export function listenAddress (def: string): Setting<ListenAddress | null> {
  return {
    datatype: 'string',
    kind: 'live',
    default: def,
    app: 'broker',
    schema: syntax(parseListenAddress)
  }
}

function parseListenAddress (raw: string): ListenAddress | null {
  if (raw === 'off' || raw === 'false') return null
  const m = /^(?:(\[[0-9A-Fa-f:.]+\]|[^:\s]+):)?(\d+)$/.exec(raw)
  if (!m) throw new Error(`"${raw}" is not a listen address (port, address:port or off)`)
  const port = Number(m[2])
  if (port > 65535) throw new Error(`port ${port} is out of range 0..65535`)
  const host = m[1] === undefined ? '0.0.0.0' : m[1].replace(/^\[|\]$/g, '')
  return { host, port }
}

/** Connections per second: `1000` or `1000/s`; 0 means unlimited. */
export function rate (def: number): Setting<number> {
  return {
    datatype: 'integer',
    kind: 'live',
    default: String(def),
    app: 'broker',
    schema: syntax(parseRate)
  }
}

function parseRate (raw: string): number {
  const m = /^(\d+)(?:\/s)?$/.exec(raw)
  if (!m) throw new Error(`"${raw}" is not a rate (connections per second, e.g. 1000)`)
  return Number(m[1])
}

/** A setting that takes effect at the next start. */
export function restart<T> (setting: Setting<T>): Setting<T> {
  return { ...setting, kind: 'restart' }
}

/** A setting that cannot change while the node runs. */
export function fixed<T> (setting: Setting<T>): Setting<T> {
  return { ...setting, kind: 'fixed' }
}
