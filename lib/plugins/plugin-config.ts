// Reads etc/plugins/<plugin>.conf with the broker's `key = value` parser and
// validates it with the plugin's Joi schema; an error names file and line.
import { readFile, rename, rm, stat, writeFile } from 'node:fs/promises'
import type Joi from 'joi'
import { ConfigError, parseConfigText, type ConfigLine } from '../config/parse.js'

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

/** Later lines win, as in etc/broker.conf; the result is the schema's converted value. */
export function validatePluginConfig<C> (schema: Joi.ObjectSchema<C>, lines: ConfigLine[], file: string): C {
  const raw: Record<string, string> = {}
  const origins = new Map<string, string>()
  for (const line of lines) {
    raw[line.key] = line.value
    origins.set(line.key, line.origin)
  }
  const { value, error } = schema.validate(raw, { abortEarly: true, convert: true })
  if (error) {
    const key = String(error.details[0]?.path?.[0] ?? '')
    throw new ConfigError(origins.get(key) ?? file, `${key === '' ? '' : `${key}: `}${error.details[0]?.message ?? error.message}`)
  }
  return value
}

/** A value as a conf line can hold it: quoted when spaces at its ends or a `#` would be lost; undefined when it cannot be written. */
function confValue (value: string): string | undefined {
  if (/[\r\n]/.test(value)) return undefined
  if (value === value.trim() && !value.includes('#') && !value.startsWith('"')) return value
  return value.includes('"') ? undefined : `"${value}"`
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
