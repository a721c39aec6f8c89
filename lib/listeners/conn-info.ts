// What the node knows about a connection's transport, recorded by the
// listener and read by hooks, the API and $SYS notices (SPEC §2.1).
import type { Duplex } from 'node:stream'

export interface ConnInfo {
  /** `mqtt:tcp`, `mqtt:ssl`, `mqtt:ws`, `mqtt:wss` */
  protocol: string
  zone: string
  ipAddress: string
  port: number
  /** subject of the client certificate; `nossl` without TLS, `undefined` with TLS but no certificate */
  peercert: string
  /** set when the listener could not admit the connection: its CONNECT is answered with this refusal */
  refusal?: import('./gate.js').Refusal
}

const infos = new WeakMap<object, ConnInfo>()

export function setConnInfo (conn: Duplex, info: ConnInfo): void {
  infos.set(conn, info)
}

export function connInfo (conn: object): ConnInfo | undefined {
  return infos.get(conn)
}

/** Strips the IPv4-mapped IPv6 prefix so `::ffff:127.0.0.1` reads `127.0.0.1`. */
export function plainAddress (address: string | undefined): string {
  if (address === undefined) return 'undefined'
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address
}
