// MQTT over WebSocket (`mqtt:ws`) and secure WebSocket (`mqtt:wss`) at
// `mqtt_path`, with the MQTT sub-protocols of SPEC §4.4 (and plain `mqtt`).
import { createServer, type IncomingMessage, type Server } from 'node:http'
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https'
import { isIP, type Socket } from 'node:net'
import type { TlsOptions } from 'node:tls'
import { WebSocketServer, createWebSocketStream } from 'ws'
import type { ListenAddress } from '../config/types.js'
import { plainAddress, recordConnection, type Peer } from './conn-info.js'
import { ConnectionGate, type Refusal } from './gate.js'
import { closeServer, listen, listenerLabel, sameTlsMaterial, type ConnectionHandler, type Listener } from './listener.js'

export const MQTT_SUBPROTOCOLS = new Set(['mqtt', 'mqttv3.1', 'mqttv3.1.1', 'mqttv5.0'])

/** The largest MQTT packet there is: a 4-byte remaining length (268 435 455) and its fixed header. */
const MQTT_MAX_PACKET = 268_435_455 + 5
/**
 * A WebSocket message may carry the tail of one packet and the head of the
 * next besides a largest allowed packet; this much room is left for them.
 */
const WS_MESSAGE_ROOM = 4096

/** The largest WebSocket message read for a `mqtt.max_packet_size` (0: no limit but MQTT's own). */
export function wsMaxPayload (maxPacketSize: number): number {
  return maxPacketSize > 0 ? maxPacketSize + WS_MESSAGE_ROOM : MQTT_MAX_PACKET
}

export interface WsListenerOptions {
  name: string
  zone: string
  address: ListenAddress
  path: string
  acceptors: number
  maxClients: number
  maxConnRate: number
  /** `mqtt.max_packet_size`: a larger WebSocket message closes the connection before it is buffered */
  maxPacketSize: number
  tls?: TlsOptions
  /** request header naming the client's address (set by a proxy in front), e.g. `X-Forwarded-For` */
  proxyAddressHeader?: string
  /** request header naming the client's port, e.g. `X-Forwarded-Port` */
  proxyPortHeader?: string
  handle: ConnectionHandler
}

export function chooseSubprotocol (offered: Set<string>): string | false {
  for (const protocol of offered) {
    if (MQTT_SUBPROTOCOLS.has(protocol)) return protocol
  }
  return false
}

function headerValue (req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name.toLowerCase()]
  return Array.isArray(value) ? value.join(',') : value
}

/**
 * The client's address from the proxy's request headers: the left-most entry
 * of a comma-separated list (`X-Forwarded-For: client, proxy1, proxy2`). A
 * header that is missing or not an IP address leaves the socket's address;
 * a missing port header leaves the socket's port (as EMQ X does).
 */
export function forwardedPeer (req: IncomingMessage, socket: Socket, addressHeader: string, portHeader?: string): Peer | undefined {
  let address = headerValue(req, addressHeader)?.split(',')[0].trim()
  if (address?.startsWith('[') === true && address.endsWith(']')) address = address.slice(1, -1)
  if (address === undefined || isIP(address) === 0) return undefined
  const portText = portHeader === undefined ? undefined : headerValue(req, portHeader)?.split(',')[0].trim()
  const port = portText !== undefined && /^\d{1,5}$/.test(portText) && Number(portText) <= 65535 ? Number(portText) : socket.remotePort ?? 0
  return { address: plainAddress(address), port }
}

export class WsListener implements Listener {
  readonly protocol: string
  readonly name: string
  readonly id: string
  readonly zone: string
  readonly acceptors: number
  readonly gate: ConnectionGate
  readonly address: ListenAddress
  readonly #server: Server
  readonly #wss: WebSocketServer
  #tls: TlsOptions | undefined

  constructor (options: WsListenerOptions) {
    const secure = options.tls !== undefined
    this.protocol = secure ? 'mqtt:wss' : 'mqtt:ws'
    this.name = options.name
    this.id = `${this.protocol}:${this.name}`
    this.zone = options.zone
    this.acceptors = options.acceptors
    this.address = { ...options.address }
    this.gate = new ConnectionGate(options.maxClients, options.maxConnRate)
    const addressHeader = options.proxyAddressHeader
    this.#wss = new WebSocketServer({ noServer: true, handleProtocols: chooseSubprotocol, perMessageDeflate: false, maxPayload: wsMaxPayload(options.maxPacketSize) })
    this.#tls = options.tls
    this.#server = secure ? createHttpsServer(options.tls!) : createServer()
    this.#server.on('request', (_req, res) => {
      res.writeHead(426, { 'content-type': 'text/plain' }).end(`MQTT over WebSocket is served at ${options.path}\n`)
    })
    this.#server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
      const path = (req.url ?? '').split('?')[0]
      if (path !== options.path) {
        socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n')
        return
      }
      socket.on('error', () => socket.destroy())
      const hand = (refusal?: Refusal): void => {
        this.#wss.handleUpgrade(req, socket, head, (ws) => {
          const stream = createWebSocketStream(ws)
          stream.on('error', () => stream.destroy())
          const peer = addressHeader === undefined ? undefined : forwardedPeer(req, socket, addressHeader, options.proxyPortHeader)
          recordConnection(stream, socket, this, secure, refusal, peer)
          options.handle(stream, req)
        })
      }
      this.gate.admit(socket, hand, hand)
    })
  }

  async start (): Promise<void> {
    this.address.port = await listen(this.#server, this.address, listenerLabel(this))
  }

  renewTls (tls: TlsOptions): boolean {
    if (this.#tls === undefined) throw new Error(`${listenerLabel(this)} is not a TLS listener`)
    const server = this.#server as HttpsServer
    server.setSecureContext(tls)
    const changed = !sameTlsMaterial(this.#tls, tls)
    this.#tls = tls
    return changed
  }

  async stop (): Promise<void> {
    this.gate.close()
    this.#wss.close()
    await closeServer(this.#server)
  }
}
