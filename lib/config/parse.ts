// Reads EMQ X-style configuration text: `key = value` lines, `#` comments,
// blank lines ignored. Values run to the end of the line (trimmed); a value
// may be wrapped in double quotes to keep leading/trailing spaces or a `#`.

export interface ConfigLine {
  key: string
  value: string
  /** where the value came from, e.g. `etc/broker.conf:12`, `--set`, `env BROKER_X` */
  origin: string
}

export class ConfigError extends Error {
  constructor (readonly origin: string, message: string) {
    super(`${origin}: ${message}`)
    this.name = 'ConfigError'
  }
}

// a level may hold `-` after its first character: EMQ X's `web.hook.headers.content-type`
const KEY_PATTERN = /^[A-Za-z0-9_$][A-Za-z0-9_$-]*(\.[A-Za-z0-9_$][A-Za-z0-9_$-]*)*$/

export function parseConfigText (text: string, fileName: string): ConfigLine[] {
  const lines: ConfigLine[] = []
  const rows = text.split(/\r?\n/)
  for (let i = 0; i < rows.length; i++) {
    const origin = `${fileName}:${i + 1}`
    const parsed = parseConfigLine(rows[i], origin)
    if (parsed) lines.push(parsed)
  }
  return lines
}

/** Parses one `key = value` row; returns undefined for blank and comment rows. */
export function parseConfigLine (row: string, origin: string): ConfigLine | undefined {
  const trimmed = row.trim()
  if (trimmed === '' || trimmed.startsWith('#')) return undefined
  const eq = trimmed.indexOf('=')
  if (eq < 0) throw new ConfigError(origin, `expected "key = value", got "${trimmed}"`)
  const key = trimmed.slice(0, eq).trim()
  if (!KEY_PATTERN.test(key)) throw new ConfigError(origin, `"${key}" is not a valid key`)
  return { key, value: parseValue(trimmed.slice(eq + 1), origin, key), origin }
}

function parseValue (raw: string, origin: string, key: string): string {
  const value = raw.trim()
  if (!value.startsWith('"')) {
    const hash = value.indexOf(' #')
    return (hash >= 0 ? value.slice(0, hash) : value).trim()
  }
  const end = value.indexOf('"', 1)
  if (end < 0) throw new ConfigError(origin, `${key}: unterminated quoted value`)
  const rest = value.slice(end + 1).trim()
  if (rest !== '' && !rest.startsWith('#')) throw new ConfigError(origin, `${key}: unexpected text after quoted value`)
  return value.slice(1, end)
}
