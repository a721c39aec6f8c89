// Builds the node's Config from etc/broker.conf, then the runtime overrides
// kept in <data_dir>/configs.override (when a root is given), then environment
// variables, then command-line `--set key=value` pairs (later sources win).
import { readFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { ConfigOverrides, OVERRIDE_FILE, readOverrideLines } from './overrides.js'
import { ConfigError, parseConfigLine, parseConfigText, type ConfigLine } from './parse.js'
import { canonicalKey } from './schema.js'
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

export interface LoadOptions {
  file?: string
  env?: NodeJS.ProcessEnv
  sets?: string[]
  /** the install root `node.data_dir` is relative to: given, the runtime overrides are read and kept (`config.overrides`) */
  root?: string
}

export async function loadConfig ({ file, env = {}, sets = [], root }: LoadOptions): Promise<Config> {
  const fileLines = file === undefined ? [] : await readConfigFile(file)
  const startLines = [...envToLines(env), ...setsToLines(sets)]
  const base = new Config([...fileLines, ...startLines])
  if (root === undefined) return base
  const overrideFile = join(resolve(root, base.get('node.data_dir')), OVERRIDE_FILE)
  const stored = await readOverrideLines(overrideFile)
  const config = new Config([...fileLines, ...stored, ...startLines])
  config.overrides = new ConfigOverrides(overrideFile, stored, base, new Set(startLines.map((line) => canonicalKey(line.key))))
  return config
}
