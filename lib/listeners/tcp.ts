// MQTT over TCP (`mqtt:tcp`) and over TLS (`mqtt:ssl`), optionally behind a
// load balancer speaking the PROXY protocol (docs/listeners-proxy.md).
import { createServer, type Server, type Socket } from 'node:net'
import { createServer as createTlsServer, type Server as TlsServer, type TLSSocket, type TlsOptions } from 'node:tls'
import type { ListenAddress } from '../config/types.js'
import { recordConnection, type Peer } from './conn-info.js'
import { ConnectionGate, type Refusal } from './gate.js'
import { closeServer, listen, listenerLabel, sameTlsMaterial, type ConnectionHandler, type Listener } from './listener.js'
import { readProxyHeader } from './proxy-protocol.js'

export interface SocketListenerOptions {
  name: string
  zone: string
  address: ListenAddress
  acceptors: number
  maxConnections: number
  maxConnRate: number
  /** TLS options for `mqtt:ssl`; absent for plain TCP */
  tls?: TlsOptions
  /** when set, every connection must start with a PROXY protocol v1 or v2 header within this many ms */
  proxyProtocolTimeout?: number
  handle: ConnectionHandler
}

export class SocketListener implements Listener {
  readonly protocol: string
  readonly name: string
  readonly id: string
  readonly zone: string
  readonly acceptors: number
  readonly gate: ConnectionGate
  readonly address: ListenAddress
  readonly #server: Server
  /** the server that does the TLS handshakes (the listening one, or the one behind the PROXY header reader) */
  #tlsServer: TlsServer | undefined
  #tls: TlsOptions | undefined

  constructor (options: SocketListenerOptions) {
    const secure = options.tls !== undefined
    this.protocol = secure ? 'mqtt:ssl' : 'mqtt:tcp'
    this.name = options.name
    this.id = `${this.protocol}:${this.name}`
    this.zone = options.zone
    this.acceptors = options.acceptors
    this.address = { ...options.address }
    this.gate = new ConnectionGate(options.maxConnections, options.maxConnRate)
    const handOn = (socket: Socket, refusal?: Refusal, peer?: Peer): void => {
      recordConnection(socket, socket, this, secure, refusal, peer)
      options.handle(socket)
    }
    const admit = (socket: Socket, reach: (refusal?: Refusal) => void): void => {
      socket.setNoDelay(true)
      this.gate.admit(socket, reach, reach)
    }
    const timeout = options.proxyProtocolTimeout
    if (timeout === undefined) {
      const onSocket = (socket: Socket): void => admit(socket, (refusal) => handOn(socket, refusal))
      this.#server = secure
        ? this.#handshakes(options.tls!).on('secureConnection', onSocket)
        : createServer(onSocket)
    } else if (!secure) {
      // admitted first, as without a proxy: max_connections and max_conn_rate bound the sockets waiting for a header
      this.#server = createServer((socket) => admit(socket, (refusal) => {
        this.#proxied(socket, timeout, (peer) => handOn(socket, refusal, peer))
      }))
    } else {
      this.#server = this.#proxiedTls(options.tls!, timeout, (socket, peer) => admit(socket, (refusal) => handOn(socket, refusal, peer)))
    }
  }

  async start (): Promise<void> {
    this.address.port = await listen(this.#server, this.address, listenerLabel(this))
  }

  renewTls (tls: TlsOptions): boolean {
    if (this.#tlsServer === undefined || this.#tls === undefined) throw new Error(`${listenerLabel(this)} is not a TLS listener`)
    this.#tlsServer.setSecureContext(tls)
    const changed = !sameTlsMaterial(this.#tls, tls)
    this.#tls = tls
    return changed
  }

  async stop (): Promise<void> {
    this.gate.close()
    await closeServer(this.#server)
  }

  /** Reads the PROXY header, then calls `next`; a connection without a valid one is closed unread. */
  #proxied (socket: Socket, timeout: number, next: (peer: Peer | undefined) => void): void {
    readProxyHeader(socket, timeout, (err, header) => {
      if (err !== null) {
        this.gate.counters.proxyRefused++
        socket.on('error', () => {})
        socket.destroy()
        return
      }
      next(header?.peer)
    })
  }

  #handshakes (tls: TlsOptions): TlsServer {
    this.#tls = tls
    this.#tlsServer = createTlsServer(tls).on('tlsClientError', (_err, socket) => socket.destroy())
    return this.#tlsServer
  }

  /**
   * The header comes before the TLS handshake: a plain server reads it off the
   * raw socket and hands the socket (the ClientHello put back) to a TLS server
   * that never listens itself. The peer is found again by the socket's
   * remote address and port, which the TLS socket over it shares.
   */
  #proxiedTls (tls: TlsOptions, timeout: number, onSocket: (socket: TLSSocket, peer?: Peer) => void): Server {
    const peers = new Map<string, Peer>()
    const key = (socket: Socket): string => `${socket.remoteAddress ?? ''}|${socket.remotePort ?? 0}`
    const tlsServer = this.#handshakes(tls)
      .on('secureConnection', (socket: TLSSocket) => onSocket(socket, peers.get(key(socket))))
    return createServer((raw) => this.#proxied(raw, timeout, (peer) => {
      if (peer !== undefined) {
        const k = key(raw)
        peers.set(k, peer)
        raw.once('close', () => peers.delete(k))
      }
      tlsServer.emit('connection', raw)
    }))
  }
}
