// Reads etc/plugins/<plugin>.conf with the broker's `key = value` parser, then
// the settings changed at run time in data/plugins/<plugin>.conf over it, and
// validates the result with the plugin's Joi schema (in the core's words:
// lib/config/validation.ts); an error names the file and line the bad value
// came from. etc/ is never written: the management API
// writes only the override file.
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import type Joi from 'joi'
import { confValue } from '../config/overrides.js'
import { ConfigError, parseConfigText, type ConfigLine } from '../config/parse.js'
import { VALIDATE_OPTIONS, whyOf } from '../config/validation.js'

export async function readPluginConfigLines (file: string): Promise<ConfigLine[]> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw new ConfigError(file, `cannot read plugin configuration (${(err as NodeJS.ErrnoException).code ?? 'error'})`)
  }
  return parseConfigText(text, file)
}

/** The operator's file, then the run-time overrides (later lines win). */
export async function readPluginConfig (file: string, overrideFile: string): Promise<ConfigLine[]> {
  return [...await readPluginConfigLines(file), ...await readPluginConfigLines(overrideFile)]
}

/** Later lines win, as in etc/broker.conf; the result is the schema's converted value. */
export function validatePluginConfig<C> (schema: Joi.ObjectSchema<C>, lines: ConfigLine[], file: string): C {
  const raw: Record<string, string> = {}
  const origins = new Map<string, string>()
  for (const line of lines) {
    raw[line.key] = line.value
    origins.set(line.key, line.origin)
  }
  const { value, error } = schema.validate(raw, VALIDATE_OPTIONS)
  if (error) {
    const key = String(error.details[0]?.path?.[0] ?? '')
    throw new ConfigError(origins.get(key) ?? file, `${key === '' ? '' : `${key}: `}${whyOf(error.details[0], schema)}`)
  }
  return value
}

/**
 * The conf text with each key set to its new value: every line of that key
 * is rewritten in place (comments and the rest kept), a key with no line is
 * appended. Throws ConfigError for a key or value a conf line cannot hold.
 */
export function setConfigValues (text: string, values: Readonly<Record<string, string>>, file: string): string {
  const rows = text === '' ? [] : text.split(/\r?\n/)
  if (rows.length > 0 && rows[rows.length - 1] === '') rows.pop()
  for (const [key, value] of Object.entries(values)) {
    const written = confValue(value)
    if (written === undefined || parseConfigText(`${key} = ${written}`, file)[0]?.value !== value) {
      throw new ConfigError(file, `${key}: the value cannot be written to a conf line`)
    }
    let found = false
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i].trim()
      if (row.startsWith('#')) continue
      const eq = row.indexOf('=')
      if (eq > 0 && row.slice(0, eq).trim() === key) {
        rows[i] = `${key} = ${written}`
        found = true
      }
    }
    if (!found) rows.push(`${key} = ${written}`)
  }
  return rows.map((row) => row + '\n').join('')
}

/** Drops every line of each key (comments and other keys kept). */
export function removeConfigKeys (text: string, keys: Iterable<string>): string {
  const drop = new Set(keys)
  const rows = text === '' ? [] : text.split(/\r?\n/)
  if (rows.length > 0 && rows[rows.length - 1] === '') rows.pop()
  return rows.filter((row) => {
    const trimmed = row.trim()
    const eq = trimmed.indexOf('=')
    return trimmed.startsWith('#') || eq <= 0 || !drop.has(trimmed.slice(0, eq).trim())
  }).map((row) => row + '\n').join('')
}

/**
 * The override file's new text: each key set to its value, except that a
 * value equal to the operator's file (`base`) removes the key's override.
 * Throws ConfigError for a key or value a conf line cannot hold.
 */
export function overrideText (text: string, base: readonly ConfigLine[], values: Readonly<Record<string, string>>, file: string, plugin: string): string {
  const inFile = new Map(base.map((line) => [line.key, line.value]))
  const reset = Object.keys(values).filter((key) => inFile.get(key) === values[key])
  const set = Object.fromEntries(Object.entries(values).filter(([key]) => !reset.includes(key)))
  const start = text === ''
    ? `# Settings of ${plugin} changed at run time (management API), written by the broker.\n# They apply over etc/plugins/${plugin}.conf, which is left as the operator wrote it.\n`
    : text
  return setConfigValues(removeConfigKeys(start, reset), set, file)
}

/**
 * Settings changed at run time where `null` resets a key to its default: the
 * run-time change is removed (`unset`), so the operator's file, or else the
 * schema's default, applies. A key the operator's file sets is reset by
 * setting the schema's default over it; one with no default there cannot be
 * reset here (ConfigError: edit the file).
 */
export function resetToDefaults (schema: Joi.ObjectSchema, base: readonly ConfigLine[], values: Readonly<Record<string, string | null>>, file: string): { set: Record<string, string>, unset: string[] } {
  const inFile = new Map(base.map((line) => [line.key, line.origin]))
  const set: Record<string, string> = {}
  const unset: string[] = []
  for (const [key, value] of Object.entries(values)) {
    if (value !== null) set[key] = value
    else if (!inFile.has(key)) unset.push(key)
    else {
      const fallback = schemaDefault(schema, key)
      if (fallback === undefined) throw new ConfigError(inFile.get(key) ?? file, `${key}: has no default to reset to; it is set in ${file}: change it there`)
      set[key] = fallback
    }
  }
  return { set, unset }
}

/** A key's default in the schema, as conf text; undefined when it has none (or the key is unknown). */
function schemaDefault (schema: Joi.ObjectSchema, key: string): string | undefined {
  let fallback: unknown
  try {
    fallback = (schema.extract([key]).describe() as { flags?: { default?: unknown } }).flags?.default
  } catch {
    return undefined
  }
  return typeof fallback === 'string' || typeof fallback === 'number' || typeof fallback === 'boolean' ? String(fallback) : undefined
}

/** Writes the override file in one step (its folder made when missing); removed when it sets nothing. */
export async function writeOverrideFile (file: string, text: string): Promise<void> {
  if (parseConfigText(text, file).length === 0) return await rm(file, { force: true })
  await mkdir(dirname(file), { recursive: true })
  await writeFileAtomically(file, text)
}

/** Replaces the file in one step (a temporary file beside it, then rename), keeping its permissions. */
export async function writeFileAtomically (file: string, text: string): Promise<void> {
  const temporary = `${file}.${process.pid}.${Date.now()}.tmp`
  const mode = await stat(file).then((s) => s.mode & 0o777, () => 0o640)
  try {
    await writeFile(temporary, text, { mode })
    await rename(temporary, file)
  } catch (err) {
    await rm(temporary, { force: true })
    throw err
  }
}

const DURATION_TEXT: Array<[string, number]> = [['w', 604_800_000], ['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1000]]

/**
 * A plugin setting's value as the configuration API shows it, from the value
 * its schema converted: sizes in bytes (as SPEC §8 lists them), durations in
 * their largest whole unit (`0`, `30s`, `2h`, `1500ms`), the rest as text.
 */
export function configItemValue (datatype: string, value: unknown): string {
  if (value === undefined || value === null) return ''
  if (datatype.includes('duration') && typeof value === 'number') {
    if (value === 0) return '0'
    const unit = DURATION_TEXT.find(([, ms]) => value % ms === 0)
    return unit === undefined ? `${value}ms` : `${value / unit[1]}${unit[0]}`
  }
  return String(value)
}
