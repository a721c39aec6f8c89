// Structured logs (pino). EMQ X level names map onto pino's; a terminal gets
// the human-readable form, anything else gets one JSON object per line.
import pino, { type Logger } from 'pino'

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

export function pinoLevel (level: string): pino.Level {
  return LEVELS[level] ?? 'info'
}

export function createLogger (level: string, pretty = process.stdout.isTTY === true): Logger {
  const options: pino.LoggerOptions = { level: pinoLevel(level), base: { pid: process.pid } }
  if (pretty) {
    return pino({ ...options, transport: { target: 'pino-pretty', options: { translateTime: 'SYS:standard', ignore: 'pid,hostname' } } })
  }
  return pino(options)
}

/** Keeps `logger`'s level on `log.console.level` as it changes at run time; returns the undo. */
export function followLevel (config: { on: (event: 'change', listener: (key: string, value: unknown) => void) => unknown, off: (event: 'change', listener: (key: string, value: unknown) => void) => unknown }, logger: Logger): () => void {
  const onChange = (key: string, value: unknown): void => {
    if (key === 'log.console.level') logger.level = pinoLevel(String(value))
  }
  config.on('change', onChange)
  return () => { config.off('change', onChange) }
}
