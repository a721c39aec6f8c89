// What the log warns about once the node runs: MQTT open to anyone on an
// address other hosts reach (`mqtt.allow_anonymous` on, a listener bound to
// a non-loopback address). The management API's default credentials are
// warned about by broker_management, which holds them.
import { isIP } from 'node:net'
import type { Logger } from './log.js'

interface BoundListener { id: string, protocol: string, address: { host: string, port: number } }

/** 127.0.0.0/8, ::1, `localhost` (and ::ffff:127.x): reachable from this host only. */
export function isLoopback (host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase()
  if (h === 'localhost' || h === '::1') return true
  const v4 = h.startsWith('::ffff:') ? h.slice(7) : h
  return isIP(v4) === 4 && v4.startsWith('127.')
}

/** The MQTT listeners (`mqtt:*`) anyone may connect to without credentials, when anonymous access is on. */
export function publicAnonymousListeners (allowAnonymous: boolean, listeners: readonly BoundListener[]): string[] {
  if (!allowAnonymous) return []
  return listeners.filter((l) => l.protocol.startsWith('mqtt:') && !isLoopback(l.address.host)).map((l) => `${l.id} ${l.address.host}:${l.address.port}`)
}

export function warnAnonymousListeners (logger: Logger, allowAnonymous: boolean, listeners: readonly BoundListener[]): void {
  const open = publicAnonymousListeners(allowAnonymous, listeners)
  if (open.length === 0) return
  logger.warn({ listeners: open }, 'mqtt.allow_anonymous is on and MQTT listens on a public address: a client with no credentials is let in unless an authentication plugin refuses it (set mqtt.allow_anonymous = false or bind the listeners to 127.0.0.1)')
}
