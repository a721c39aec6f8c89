// The one validator of every configuration value: joi, for etc/broker.conf
// (each setting's schema, lib/config/types.ts) and for the plugins' confs
// (their joi schemas, lib/plugins/plugin-config.ts) alike, with one wording
// of why a value is refused. The caller puts `file:line: key: ` before it.
import type Joi from 'joi'

/** How every conf value is validated: text converted to the schema's type, the first error only. */
export const VALIDATE_OPTIONS: Joi.ValidationOptions = { abortEarly: true, convert: true }

/** What joi's `describe()` says of a key that the wording needs. */
interface Described {
  rules?: Array<{ name: string, args?: { limit?: unknown } }>
  truthy?: unknown[]
  falsy?: unknown[]
}

/** A value as the error shows it: text quoted, numbers as they are. */
function shown (value: unknown): string {
  return typeof value === 'string' ? `"${value}"` : String(value)
}

function limit (d: Described, rule: string): unknown {
  return d.rules?.find((r) => r.name === rule)?.args?.limit
}

/** `out of range 0..65535` when both inclusive limits are known, else the limits in words: `out of range (more than 0, at most 1)`. */
function range (d: Described): string {
  const [min, max] = [limit(d, 'min'), limit(d, 'max')]
  if (min !== undefined && max !== undefined) return `out of range ${String(min)}..${String(max)}`
  const words: Array<[string, unknown]> = [['at least', min], ['more than', limit(d, 'greater')], ['at most', max], ['less than', limit(d, 'less')]]
  return `out of range (${words.filter(([, n]) => n !== undefined).map(([word, n]) => `${word} ${String(n)}`).join(', ')})`
}

type Context = Joi.Context & { valids?: unknown[], error?: Error, limit?: unknown, regex?: string, name?: string }

/** joi's error types as this broker words them; any other type keeps joi's own message. */
const WHY: Record<string, (value: unknown, c: Context, d: Described) => string> = {
  'number.base': (v, _c, d) => `${shown(v)} is not ${d.rules?.some((r) => r.name === 'integer') === true ? 'an integer' : 'a number'}`,
  'number.integer': (v) => `${shown(v)} is not an integer`,
  'number.unsafe': (v) => `${shown(v)} is too large`,
  'number.infinity': (v) => `${shown(v)} is too large`,
  'number.min': (v, _c, d) => `${shown(v)} is ${range(d)}`,
  'number.max': (v, _c, d) => `${shown(v)} is ${range(d)}`,
  'number.greater': (v, _c, d) => `${shown(v)} is ${range(d)}`,
  'number.less': (v, _c, d) => `${shown(v)} is ${range(d)}`,
  'boolean.base': (v, _c, d) => `${shown(v)} is not a switch (${['true', 'false', ...(d.truthy ?? []), ...(d.falsy ?? [])].map(String).join(' | ')})`,
  'any.only': (v, c) => `${shown(v)} is not one of ${(c.valids ?? []).map(String).join(' | ')}`,
  'any.custom': (_v, c) => c.error?.message ?? 'is refused',
  'any.required': () => 'is required',
  'object.unknown': () => 'unknown setting',
  'string.base': (v) => `${shown(v)} is not text`,
  'string.empty': () => 'is empty (give a value or leave the key out)',
  'string.min': (v, c) => `${shown(v)} is shorter than ${String(c.limit)} characters`,
  'string.max': (v, c) => `${shown(v)} is longer than ${String(c.limit)} characters`,
  'string.pattern.base': (v, c) => `${shown(v)} does not match ${c.regex ?? 'the pattern'}`,
  'string.pattern.name': (v, c) => `${shown(v)} is not ${c.name ?? 'valid'}`
}

/** The description of the key the error is about (`{}` when the schema has no such key). */
function describedAt (schema: Joi.Schema, path: ReadonlyArray<string | number>): Described {
  try {
    return (path.length === 0 ? schema : schema.extract(path.map(String))).describe() as Described
  } catch {
    return {}
  }
}

/** Why joi refused a value, in the broker's words (no key: the caller names it); another type keeps joi's message without its leading `"key"`. */
export function whyOf (detail: Joi.ValidationErrorItem, schema: Joi.Schema): string {
  const word = WHY[detail.type]
  const context = detail.context ?? {}
  if (word !== undefined) return word(context.value, context, describedAt(schema, detail.path))
  const label = `"${String(context.label)}" `
  return detail.message.startsWith(label) ? detail.message.slice(label.length) : detail.message
}

/** The value `raw` converted by `schema`; throws an Error saying why it is refused. */
export function validateValue<T> (schema: Joi.Schema<T>, raw: string): T {
  const { value, error } = schema.validate(raw, VALIDATE_OPTIONS)
  if (error !== undefined) throw new Error(whyOf(error.details[0], schema))
  return value
}
