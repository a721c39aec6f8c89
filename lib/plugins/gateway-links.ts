// A protocol gateway's clients reach the engine as in-process MQTT
// connections: each is a pair of in-memory streams, one end handed to the
// engine like a listener's socket (with the real peer's transport facts
// recorded in conn-info), the other given to the gateway. The engine then
// authenticates, authorizes, lists, counts, bans and kicks the client as any
// other; a kick or a close on the engine's side ends the gateway's end.
import { Duplex } from 'node:stream'
import { setConnInfo } from '../listeners/conn-info.js'
import type { GatewayConnection, GatewayLink } from '../plugin-kit/contract.js'
import type { Releases } from './releases.js'

/**
 * One end of an in-memory byte stream pair: what one end writes, the other
 * reads, with back-pressure (a write waits until the reader wants more). An
 * end that ends half-closes (the other reads its end); one destroyed destroys
 * the other, as a reset socket would.
 */
export class LinkEnd extends Duplex {
  #other: LinkEnd | undefined
  /** this end's write callback, waiting until the other end reads again */
  #waiting: (() => void) | undefined
  /** the wire bytes of the gateway's transport (metrics' bytes/received and bytes/sent read them, as a socket's) */
  bytesRead = 0
  bytesWritten = 0

  static pair (): [LinkEnd, LinkEnd] {
    const a = new LinkEnd()
    const b = new LinkEnd()
    a.#other = b
    b.#other = a
    return [a, b]
  }

  override _write (chunk: Buffer, _encoding: BufferEncoding, done: (err?: Error | null) => void): void {
    const other = this.#other
    if (other === undefined || other.destroyed) {
      done(new Error('link closed'))
      return
    }
    if (other.push(chunk)) done()
    else this.#waiting = done
  }

  override _read (): void {
    const other = this.#other
    if (other === undefined) return
    const waiting = other.#waiting
    other.#waiting = undefined
    waiting?.()
  }

  override _final (done: (err?: Error | null) => void): void {
    const other = this.#other
    if (other !== undefined && !other.destroyed) other.push(null)
    done()
  }

  override _destroy (err: Error | null, done: (err?: Error | null) => void): void {
    const other = this.#other
    this.#other = undefined
    const waiting = this.#waiting
    this.#waiting = undefined
    waiting?.()
    if (other !== undefined && !other.destroyed) other.destroy()
    done(err)
  }
}

/**
 * The links of one plugin load: `connect` hands the engine its end and
 * returns the gateway's; the load's release destroys those still open.
 */
export function gatewayLinks (releases: Releases, handle: (stream: Duplex) => void): { connect: (connection: GatewayConnection) => GatewayLink } {
  const open = new Set<LinkEnd>()
  releases.push('gateway links', () => {
    for (const end of open) end.destroy()
    open.clear()
  })
  return {
    connect: (connection) => {
      const [engineEnd, gatewayEnd] = LinkEnd.pair()
      setConnInfo(engineEnd, {
        protocol: connection.protocol,
        listener: connection.listener,
        zone: connection.zone ?? 'external',
        ipAddress: connection.ipAddress,
        port: connection.port,
        peercert: connection.peercert ?? 'nossl',
        protoName: connection.protoName,
        protoVer: connection.protoVer
      })
      open.add(gatewayEnd)
      gatewayEnd.once('close', () => open.delete(gatewayEnd))
      handle(engineEnd)
      return {
        stream: gatewayEnd,
        countBytes: (received, sent) => {
          if (Number.isFinite(received) && received > 0) engineEnd.bytesRead += received
          if (Number.isFinite(sent) && sent > 0) engineEnd.bytesWritten += sent
        }
      }
    }
  }
}
