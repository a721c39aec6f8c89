// Builds the node's Config from etc/broker.conf, then environment variables,
// then command-line `--set key=value` pairs (later sources win).
import { readFile } from 'node:fs/promises'
import { ConfigError, parseConfigLine, parseConfigText, type ConfigLine } from './parse.js'
import { Config } from './store.js'

/** Environment variables `BROKER_<KEY>` name a setting with `.` written `__`: BROKER_LISTENER__TCP__EXTERNAL. */
export const ENV_PREFIX = 'BROKER_'

export function envToLines (env: NodeJS.ProcessEnv): ConfigLine[] {
  const lines: ConfigLine[] = []
  for (const [name, value] of Object.entries(env)) {
    if (!name.startsWith(ENV_PREFIX) || value === undefined) continue
    const key = name.slice(ENV_PREFIX.length).toLowerCase().replaceAll('__', '.')
    lines.push({ key, value, origin: `env ${name}` })
  }
  return lines
}

export function setsToLines (sets: string[]): ConfigLine[] {
  return sets.map((set) => {
    const line = parseConfigLine(set, `--set ${set}`)
    if (!line) throw new ConfigError(`--set ${set}`, 'expected key=value')
    return line
  })
}

export async function readConfigFile (file: string): Promise<ConfigLine[]> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (err) {
    throw new ConfigError(file, `cannot read configuration file (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`)
  }
  return parseConfigText(text, file)
}

export interface LoadOptions { file?: string, env?: NodeJS.ProcessEnv, sets?: string[] }

export async function loadConfig ({ file, env = {}, sets = [] }: LoadOptions): Promise<Config> {
  const fileLines = file === undefined ? [] : await readConfigFile(file)
  return new Config([...fileLines, ...envToLines(env), ...setsToLines(sets)])
}
