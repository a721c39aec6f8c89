// Structured logs (pino). EMQ X level names map onto pino's. The console
// gets `text` (one human-readable line per record) or `json` (one JSON object
// per line); `auto` is text on a terminal, JSON otherwise. `log.file` adds a
// JSON-lines file rotated by size and count (log-file.ts). Each output has
// its own level, changeable at run time; the logger's own level is the
// lower of the two, so a record below both costs nothing.
import { isAbsolute, resolve } from 'node:path'
import pino, { type Logger } from 'pino'
import type { Config } from './config/store.js'
import { RotatingFile } from './log-file.js'
import { rfc3339 } from './timestamps.js'

export type { Logger }

const LEVELS: Record<string, pino.Level> = {
  debug: 'debug',
  info: 'info',
  notice: 'info',
  warning: 'warn',
  error: 'error',
  critical: 'fatal',
  alert: 'fatal',
  emergency: 'fatal'
}

/** the record's own RFC 3339 time is shown as it is (translateTime off): one timestamp form in text and JSON */
const PRETTY = { translateTime: false, ignore: 'pid,hostname', singleLine: true }

/**
 * What every JSON record carries: its level by name (`"level":"warn"`, not pino's 40) and its
 * time in RFC 3339 with the local offset (lib/timestamps.ts), the log's one timestamp form.
 */
const RECORD: Pick<pino.LoggerOptions, 'formatters' | 'timestamp'> = {
  formatters: { level: (label) => ({ level: label }) },
  timestamp: () => `,"time":"${rfc3339()}"`
}

export function pinoLevel (level: string): pino.Level {
  return LEVELS[level] ?? 'info'
}

export function createLogger (level: string, pretty = process.stdout.isTTY === true): Logger {
  const options: pino.LoggerOptions = { level: pinoLevel(level), base: { pid: process.pid }, ...RECORD }
  if (pretty) {
    return pino({ ...options, transport: { target: 'pino-pretty', options: PRETTY } })
  }
  return pino(options)
}

export type ConsoleFormat = 'auto' | 'text' | 'json'

export interface LogSettings {
  level: string
  format: ConsoleFormat
  /** absent: no log file */
  file?: { path: string, level: string, maxSize: number, maxCount: number }
}

/** The `log.*` settings; a relative `log.file` is resolved against the install root. */
export function logSettings (config: Config, root: string): LogSettings {
  const path = config.get('log.file')
  return {
    level: config.get('log.console.level'),
    format: config.get('log.console.format'),
    file: path === '' ? undefined : { path: isAbsolute(path) ? path : resolve(root, path), level: config.get('log.file.level'), maxSize: config.get('log.file.max_size'), maxCount: config.get('log.file.max_count') }
  }
}

interface Output { level: number, stream: { write: (data: string) => unknown, flushSync?: () => void, end?: () => void } }

/** One pino destination feeding each output whose level the record reaches (pino tells it the level: `pino.metadata`). */
const METADATA: unique symbol = Symbol.for('pino.metadata') as typeof METADATA

class Outputs {
  readonly [METADATA] = true
  lastLevel = 0
  constructor (readonly console: Output, readonly file: Output | undefined) {}

  write (data: string): void {
    if (this.lastLevel >= this.console.level) this.console.stream.write(data)
    if (this.file !== undefined && this.lastLevel >= this.file.level) this.file.stream.write(data)
  }

  flushSync (): void {
    this.console.stream.flushSync?.()
    this.file?.stream.flushSync?.()
  }

  end (): void {
    this.file?.stream.end?.()
  }

  lowest (): number {
    return Math.min(this.console.level, this.file?.level ?? Infinity)
  }
}

const outputsOf = new WeakMap<Logger, Outputs>()

/** The node's logger from `log.*`; throws when the log file cannot be opened. */
export function createNodeLogger (settings: LogSettings, isTTY = process.stdout.isTTY === true): Logger {
  const text = settings.format === 'text' || (settings.format === 'auto' && isTTY)
  const consoleStream = text
    ? pino.transport({ target: 'pino-pretty', options: { ...PRETTY, destination: 1 } }) as Output['stream']
    : pino.destination({ dest: 1, sync: true })
  const levelValue = (level: string): number => pino.levels.values[pinoLevel(level)]
  const file = settings.file === undefined
    ? undefined
    : { level: levelValue(settings.file.level), stream: new RotatingFile(settings.file.path, settings.file.maxSize, settings.file.maxCount) }
  const outputs = new Outputs({ level: levelValue(settings.level), stream: consoleStream }, file)
  const logger = pino({ level: pino.levels.labels[outputs.lowest()], base: { pid: process.pid }, ...RECORD }, outputs)
  outputsOf.set(logger, outputs)
  return logger
}

type ConfigEvents = { on: (event: 'change', listener: (key: string, value: unknown) => void) => unknown, off: (event: 'change', listener: (key: string, value: unknown) => void) => unknown }

/** Keeps `logger`'s levels on `log.console.level` (and `log.file.level`) as they change at run time; returns the undo. */
export function followLevel (config: ConfigEvents, logger: Logger): () => void {
  const onChange = (key: string, value: unknown): void => {
    if (key !== 'log.console.level' && key !== 'log.file.level') return
    const outputs = outputsOf.get(logger)
    if (outputs === undefined) {
      if (key === 'log.console.level') logger.level = pinoLevel(String(value))
      return
    }
    const output = key === 'log.console.level' ? outputs.console : outputs.file
    if (output === undefined) return
    output.level = pino.levels.values[pinoLevel(String(value))]
    logger.level = pino.levels.labels[outputs.lowest()]
  }
  config.on('change', onChange)
  return () => { config.off('change', onChange) }
}

/**
 * A child logger that keeps following its parent's level (pino children keep
 * the level they were made with): what plugins get, so a run-time level change
 * reaches their lines too. `release` stops the following.
 */
export function followingChild (parent: Logger, bindings: Record<string, unknown>): { logger: Logger, release: () => void } {
  const child = parent.child(bindings)
  // pino tells every listener of the family, with the logger whose level changed last
  const follow = (label: string, _value: number, _previous: string, _previousValue: number, changed?: Logger): void => {
    if (changed === undefined || changed === parent) child.level = label
  }
  parent.on('level-change', follow)
  return { logger: child, release: () => { parent.off('level-change', follow) } }
}
