// The gateway's one UDP socket, shared by two halves of the npm `coap`
// stack: a coap Server that takes the devices' requests (Register, Update,
// De-register) and an Agent that sends the gateway's requests to the
// devices (Read, Write, Observe …) from the same port, as LwM2M needs. Each
// datagram is checked first (parsed with coap-packet, coap's own codec):
// one that does not parse, or is over the size limit, is dropped and
// counted, as is a request in blocks (RFC 7959: LwM2M 1.0 registrations
// fit one datagram); requests go to the Server, responses to the Agent, empty
// messages (ACK, RST, ping) to the Agent (and ACK / RST to the Server too,
// which retransmits its separate responses until acknowledged). Both halves
// see a socket-like feed of their own, whose sends go out of the real socket.
import { Socket, type RemoteInfo } from 'node:dgram'
import { EventEmitter } from 'node:events'
// coap's own modules, not its index: the index makes two global Agents, each with a UDP socket of its own, at import
import agentModule from 'coap/dist/lib/agent.js'
import serverModule from 'coap/dist/lib/server.js'
import { parse as parsePacket } from 'coap-packet'

/** A datagram larger than this is dropped (RFC 7252 §4.6: 1152 bytes is the usual ceiling; this leaves room). */
export const MAX_DATAGRAM = 2048

export interface TransportEvents {
  /** a datagram dropped: it did not parse, or was too large */
  dropped: (reason: 'malformed' | 'too_large', bytes: number) => void
  /** bytes read from or written to a peer (for the node's byte counts) */
  bytes: (address: string, port: number, received: number, sent: number) => void
}

const Agent = agentModule.default
const Server = serverModule.default
type Agent = InstanceType<typeof Agent>
type Server = InstanceType<typeof Server>

export interface Transport {
  server: Server
  agent: Agent
  close: () => void
}

type SendArgs = [Buffer, number, number, number, string, ((err: Error | null, bytes: number) => void)?]

/**
 * A socket-like feed over `real` for one half of the stack: it emits the
 * datagrams routed to it and sends through `real`. Its prototype is
 * dgram.Socket's so coap's Server takes it for a socket (it resends a
 * duplicate request's cached answer only through one).
 */
function feed (real: Socket, events: TransportEvents): Socket {
  const emitter = new EventEmitter()
  Object.setPrototypeOf(emitter, Socket.prototype)
  const socket = emitter as unknown as Socket
  Object.defineProperty(socket, 'type', { value: (real as unknown as { type: string }).type })
  socket.address = () => real.address()
  socket.send = ((...args: unknown[]) => {
    // coap writes (buf, offset, length, port, address[, callback]); a send without an address is one of its error replies that would go to localhost: not sent
    const [buf, offset, length, port, address, callback] = args as SendArgs
    if (typeof address !== 'string' || typeof port !== 'number') {
      if (typeof callback === 'function') callback(null, 0)
      return
    }
    events.bytes(address, port, 0, length)
    // a send that fails is a datagram lost, as UDP loses them: coap's answers (OutgoingMessage) have no
    // 'error' listener, and an error passed back would be thrown from them
    try {
      real.send(buf, offset, length, port, address, () => {
        if (typeof callback === 'function') callback(null, length)
      })
    } catch {
      // the socket closed (the plugin unloads while an answer was on its way)
      if (typeof callback === 'function') callback(null, 0)
    }
  }) as Socket['send']
  return socket
}

/**
 * What coap-packet lets through but RFC 7252 §3 calls a message format
 * error: a header cut short, a token longer than 8 bytes or than the
 * datagram, a reserved code class (1, 6, 7), an empty message (0.00) with a
 * token or more bytes, a payload marker with no payload.
 */
export function wellFormed (msg: Buffer): boolean {
  if (msg.length < 4) return false
  const tokenLength = msg[0] & 0x0f
  if (tokenLength > 8 || msg.length < 4 + tokenLength) return false
  const codeClass = msg[1] >> 5
  if (codeClass === 1 || codeClass === 6 || codeClass === 7) return false
  if (msg[1] === 0 && (tokenLength !== 0 || msg.length !== 4)) return false
  if (msg[msg.length - 1] !== 0xff) return true
  try {
    return payloadMarkerInside(msg, 4 + tokenLength)
  } catch {
    return false
  }
}

/**
 * The last byte is 0xff: a payload marker with nothing after it (a format error), or a byte of a payload, of an
 * option's value or of the token (a random token ends in 0xff one time in 256)? Walks the options to find out.
 */
function payloadMarkerInside (msg: Buffer, start: number): boolean {
  let at = start
  while (at < msg.length) {
    const byte = msg[at]
    if (byte === 0xff) return at < msg.length - 1
    const delta = byte >> 4
    let length = byte & 0x0f
    at++
    if (delta === 13) at += 1
    else if (delta === 14) at += 2
    if (length === 13) length = msg[at++] + 13
    else if (length === 14) {
      length = msg.readUInt16BE(at) + 269
      at += 2
    }
    at += length
  }
  // no marker: the 0xff ends the token or an option's value (an option that runs past the end is cut short)
  return at === msg.length
}

/** Routes `real`'s datagrams to a coap Server (its 'request' events are the devices' requests) and an Agent. */
export function openTransport (real: Socket, events: TransportEvents, serverOptions: ConstructorParameters<typeof Server>[0]): Transport {
  const toServer = feed(real, events)
  const toAgent = feed(real, events)
  const server = new Server(serverOptions)
  server.listen(toServer)
  server.on('error', () => {})
  const agent = new Agent({ socket: toAgent })
  agent.on('error', () => {})
  real.on('message', (msg: Buffer, rinfo: RemoteInfo) => {
    events.bytes(rinfo.address, rinfo.port, msg.length, 0)
    if (msg.length > MAX_DATAGRAM) {
      events.dropped('too_large', msg.length)
      return
    }
    if (!wellFormed(msg)) {
      events.dropped('malformed', msg.length)
      return
    }
    let code: string
    let empty: boolean
    let confirmableOrNon: boolean
    let blockwise: boolean
    try {
      const packet = parsePacket(msg)
      code = packet.code
      empty = code === '0.00'
      confirmableOrNon = !packet.ack && !packet.reset
      blockwise = packet.options.some((o) => o.name === 'Block1' || o.name === 'Block2')
    } catch {
      events.dropped('malformed', msg.length)
      return
    }
    // a device's request in blocks (RFC 7959) is not taken: coap would keep each block for minutes, a memory a flood could fill
    if (blockwise && code.startsWith('0.') && !empty) {
      events.dropped('too_large', msg.length)
      return
    }
    if (empty) {
      toAgent.emit('message', msg, rinfo)
      if (!confirmableOrNon) toServer.emit('message', msg, rinfo)
    } else if (code.startsWith('0.')) {
      toServer.emit('message', msg, rinfo)
    } else {
      toAgent.emit('message', msg, rinfo)
    }
  })
  return {
    server,
    agent,
    close: () => {
      agent.close()
      server.close()
    }
  }
}
