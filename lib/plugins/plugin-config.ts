// Reads etc/plugins/<plugin>.conf with the broker's `key = value` parser and
// validates it with the plugin's Joi schema; an error names file and line.
import { readFile } from 'node:fs/promises'
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
