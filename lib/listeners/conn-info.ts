// What the node knows about a connection's transport, recorded by the
// listener and read by hooks, the API and $SYS notices (SPEC §2.1).
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import type { TLSSocket } from 'node:tls'
import type { Refusal } from './gate.js'

export interface ConnInfo {
  /** `mqtt:tcp`, `mqtt:ssl`, `mqtt:ws`, `mqtt:wss`; a gateway's, e.g. `stomp:tcp` */
  protocol: string
  /** the listener's id, e.g. `mqtt:tcp:internal` (lib/listeners/listener.ts) */
  listener: string
  zone: string
  ipAddress: string
  port: number
  /** subject of the client certificate; `nossl` without TLS, `undefined` with TLS but no certificate */
  peercert: string
  /** set when the listener could not admit the connection: its CONNECT is answered with this refusal */
  refusal?: Refusal
  /** a gateway client's protocol as the listings show it (`STOMP`); MQTT's comes from its CONNECT */
  protoName?: string
  /** a gateway client's protocol version as the listings show it (`1.2`) */
  protoVer?: number | string
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

export function peerCertSubject (socket: TLSSocket): string {
  const cert = socket.getPeerCertificate()
  if (cert === null || cert.subject === undefined) return 'undefined'
  return Object.entries(cert.subject).map(([k, v]) => `${k}=${String(v)}`).join(',')
}

/** The client's address when a proxy in front of the listener told it (PROXY protocol, X-Forwarded-For). */
export interface Peer { address: string, port: number }

/**
 * Records what a listener knows about the connection carried by `stream` over
 * `socket`; `peer` replaces the socket's address when a proxy gave the client's.
 */
export function recordConnection (stream: Duplex, socket: Socket, listener: { protocol: string, id: string, zone: string }, secure: boolean, refusal?: Refusal, peer?: Peer): void {
  setConnInfo(stream, {
    protocol: listener.protocol,
    listener: listener.id,
    zone: listener.zone,
    ipAddress: peer?.address ?? plainAddress(socket.remoteAddress),
    port: peer?.port ?? socket.remotePort ?? 0,
    peercert: secure ? peerCertSubject(socket as TLSSocket) : 'nossl',
    refusal
  })
}
