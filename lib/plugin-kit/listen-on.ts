// The address a plugin's listener takes in its settings: `<port>` (every
// address) or `<address>:<port>`, as EMQ X's `listener = 8080` lines.
import Joi from 'joi'

/** A Joi string of `<port>` or `<address>:<port>` (`[::1]:61613` too), the port 0–65535. */
export function listenOnSchema (): Joi.StringSchema {
  return Joi.string().pattern(/^(?:\S+:)?\d{1,5}$/, '<port> or <address>:<port>').custom((value: string, helpers) => {
    return listenOn(value).port <= 65535 ? value : helpers.error('any.invalid')
  }, 'port 0-65535').messages({ 'any.invalid': '{{#label}} has a port over 65535' })
}

/** `8080` → every address; `127.0.0.1:8080` → that address (`[::1]:8080` → `::1`). */
export function listenOn (value: string): { host: string, port: number } {
  const at = value.lastIndexOf(':')
  if (at < 0) return { host: '0.0.0.0', port: Number(value) }
  const host = value.slice(0, at)
  return { host: host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host, port: Number(value.slice(at + 1)) }
}
