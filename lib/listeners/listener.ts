// The listener contract shared by TCP, TLS, WebSocket and secure WebSocket.
import { once } from 'node:events'
import type { Server } from 'node:net'
import type { Duplex } from 'node:stream'
import type { IncomingMessage } from 'node:http'
import type { ListenAddress } from '../config/types.js'
import type { ConnectionGate } from './gate.js'

/** Hands a connected MQTT byte stream to the engine. */
export type ConnectionHandler = (stream: Duplex, req?: IncomingMessage) => void

export interface Listener {
  /** `mqtt:tcp` | `mqtt:ssl` | `mqtt:ws` | `mqtt:wss` (SPEC §2.10) */
  readonly protocol: string
  readonly name: string
  readonly acceptors: number
  readonly gate: ConnectionGate
  /** the configured address, and after start the bound port */
  readonly address: ListenAddress
  start: () => Promise<void>
  /** Stops accepting; open connections are left to the engine to close. */
  stop: () => Promise<void>
}

export async function listen (server: Server, address: ListenAddress): Promise<number> {
  server.listen(address.port, address.host)
  await once(server, 'listening')
  const bound = server.address()
  return typeof bound === 'object' && bound !== null ? bound.port : address.port
}

export async function closeServer (server: Server): Promise<void> {
  if (!server.listening) return
  await new Promise<void>((resolve) => server.close(() => resolve()))
}
