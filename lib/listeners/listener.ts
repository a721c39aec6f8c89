// The listener contract shared by TCP, TLS, WebSocket and secure WebSocket.
import { once } from 'node:events'
import type { Server } from 'node:net'
import type { Duplex } from 'node:stream'
import type { IncomingMessage } from 'node:http'
import type { TlsOptions } from 'node:tls'
import type { ListenAddress } from '../config/types.js'
import type { ConnectionGate } from './gate.js'

/** Hands a connected MQTT byte stream to the engine. */
export type ConnectionHandler = (stream: Duplex, req?: IncomingMessage) => void

export interface Listener {
  /** `mqtt:tcp` | `mqtt:ssl` | `mqtt:ws` | `mqtt:wss` (SPEC §2.10) */
  readonly protocol: string
  /** the `<name>` of `listener.<type>.<name>`, e.g. `external`, `internal` */
  readonly name: string
  /** `<protocol>:<name>`, e.g. `mqtt:tcp:internal`: tells two listeners of one type apart */
  readonly id: string
  /** the zone of its connections (their `zone` field) */
  readonly zone: string
  readonly acceptors: number
  readonly gate: ConnectionGate
  /** the configured address, and after start the bound port */
  readonly address: ListenAddress
  start: () => Promise<void>
  /**
   * TLS listeners: serves `tls`'s key and certificates to the connections
   * accepted from now on (open ones keep theirs); true when they differ from
   * the ones served so far. Throws, keeping the old ones, when they do not load.
   */
  renewTls?: (tls: TlsOptions) => boolean
  /** Stops accepting; open connections are left to the engine to close. */
  stop: () => Promise<void>
}

/** What a listener is called in logs and errors, e.g. `listener.tcp.internal`. */
export function listenerLabel (listener: Pick<Listener, 'protocol' | 'name'>): string {
  return `listener.${listener.protocol.replace(/^mqtt:/, '')}.${listener.name}`
}

/** Opens `server`; a failure names the listener (`listener.tcp.internal: cannot listen on 127.0.0.1:11883 (EADDRINUSE)`). */
export async function listen (server: Server, address: ListenAddress, label: string): Promise<number> {
  server.listen(address.port, address.host)
  try {
    await once(server, 'listening')
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message
    throw Object.assign(new Error(`${label}: cannot listen on ${address.host}:${address.port} (${code})`), { code: (err as NodeJS.ErrnoException).code })
  }
  const bound = server.address()
  return typeof bound === 'object' && bound !== null ? bound.port : address.port
}

export async function closeServer (server: Server): Promise<void> {
  if (!server.listening) return
  await new Promise<void>((resolve) => server.close(() => resolve()))
}

/** The TLS material of `options` that `renewTls` compares: the key and certificates served. */
export function sameTlsMaterial (a: TlsOptions, b: TlsOptions): boolean {
  return [a.key, a.cert, a.ca].every((value, i) => String(value) === String([b.key, b.cert, b.ca][i]))
}
