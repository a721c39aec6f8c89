// MQTT over TCP (`mqtt:tcp`) and over TLS (`mqtt:ssl`).
import { createServer, type Server, type Socket } from 'node:net'
import { createServer as createTlsServer, type TlsOptions } from 'node:tls'
import type { ListenAddress } from '../config/types.js'
import { recordConnection } from './conn-info.js'
import { ConnectionGate, type Refusal } from './gate.js'
import { closeServer, listen, type ConnectionHandler, type Listener } from './listener.js'

export interface SocketListenerOptions {
  name: string
  address: ListenAddress
  acceptors: number
  maxConnections: number
  maxConnRate: number
  /** TLS options for `mqtt:ssl`; absent for plain TCP */
  tls?: TlsOptions
  handle: ConnectionHandler
}

export class SocketListener implements Listener {
  readonly protocol: string
  readonly name: string
  readonly acceptors: number
  readonly gate: ConnectionGate
  readonly address: ListenAddress
  readonly #server: Server

  constructor (options: SocketListenerOptions) {
    const secure = options.tls !== undefined
    this.protocol = secure ? 'mqtt:ssl' : 'mqtt:tcp'
    this.name = options.name
    this.acceptors = options.acceptors
    this.address = { ...options.address }
    this.gate = new ConnectionGate(options.maxConnections, options.maxConnRate)
    const onSocket = (socket: Socket): void => {
      socket.setNoDelay(true)
      const hand = (refusal?: Refusal): void => {
        recordConnection(socket, socket, this.protocol, secure, refusal)
        options.handle(socket)
      }
      this.gate.admit(socket, hand, hand)
    }
    this.#server = secure
      ? createTlsServer(options.tls!).on('secureConnection', onSocket).on('tlsClientError', (_err, socket) => socket.destroy())
      : createServer(onSocket)
  }

  async start (): Promise<void> {
    this.address.port = await listen(this.#server, this.address)
  }

  async stop (): Promise<void> {
    this.gate.close()
    await closeServer(this.#server)
  }
}
