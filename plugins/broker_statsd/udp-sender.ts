// Where the StatsD lines go: a Writable stream (hot-shots' `stream` transport
// writes one line per metric to it) that sends each line as one UDP datagram
// to the server's address. The host name is resolved once per push, not per
// line. The UDP sockets (one per address family; opened at load for an
// address, at the first push for a name) go through `ctx.sockets`, so
// unloading the plugin closes them.
// Nothing here throws or fails the stream: a name that does not resolve or a
// send that fails is reported to `onError` and the line is dropped (UDP
// gives no delivery guarantee anyway).
import { createSocket, type Socket } from 'node:dgram'
import { lookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import { Writable } from 'node:stream'

export interface Target { address: string, family: 4 | 6 }

export interface UdpSenderOptions {
  host: string
  port: number
  /** registers a socket the sender opened (ctx.sockets.add) */
  track: (socket: Socket) => Socket
  onError: (err: Error) => void
}

export class UdpSender {
  /** where this push sends; undefined while the name does not resolve */
  #target: Target | undefined
  readonly #sockets = new Map<4 | 6, Socket>()
  readonly stream: Writable
  /** datagrams the system took (UDP: not that the server got them) */
  sent = 0

  constructor (private readonly options: UdpSenderOptions) {
    this.stream = new Writable({
      // hot-shots writes one line (ending in \n) per call; each is a datagram
      write: (chunk: Buffer, _encoding, done) => {
        this.#send(chunk)
        done()
      }
    })
    // an address needs no lookup: its socket is opened with the load
    const literal = isIP(options.host)
    if (literal !== 0) this.#socket(literal === 6 ? 6 : 4)
  }

  /** The address lines go to now, if the name resolved. */
  get target (): Target | undefined {
    return this.#target
  }

  /** Resolves the host name for the next push; false (and reported) when it does not resolve. */
  async resolve (): Promise<boolean> {
    const { host } = this.options
    const literal = isIP(host)
    if (literal !== 0) {
      this.#target = { address: host, family: literal as 4 | 6 }
      return true
    }
    try {
      const found = await lookup(host)
      this.#target = { address: found.address, family: found.family === 6 ? 6 : 4 }
      return true
    } catch (err) {
      this.#target = undefined
      this.options.onError(err as Error)
      return false
    }
  }

  #send (line: Buffer): void {
    const target = this.#target
    if (target === undefined) return
    const socket = this.#socket(target.family)
    try {
      socket.send(line, this.options.port, target.address, (err) => {
        if (err == null) this.sent++
        else this.options.onError(err)
      })
    } catch (err) {
      // a socket closed by the unload, a bad address: the line is dropped
      this.options.onError(err as Error)
    }
  }

  #socket (family: 4 | 6): Socket {
    let socket = this.#sockets.get(family)
    if (socket === undefined) {
      socket = this.options.track(createSocket(family === 6 ? 'udp6' : 'udp4'))
      // asynchronous failures (ICMP unreachable reported on a later send, EMSGSIZE …) arrive here
      socket.on('error', this.options.onError)
      this.#sockets.set(family, socket)
    }
    return socket
  }
}
