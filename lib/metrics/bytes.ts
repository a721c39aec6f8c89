// `bytes/received` and `bytes/sent` (SPEC §2.11), taken from the sockets
// rather than counted per packet: the kernel-facing counters `bytesRead` and
// `bytesWritten` of every client socket, summed for closed sockets when they
// close and for open ones when the metric is read. Nothing runs per packet.
// TCP and TLS count MQTT bytes (TLS: the plaintext); WebSocket counts the
// socket under it (HTTP upgrade and WebSocket framing included).
import type { Socket } from 'node:net'

export class ByteCounter {
  readonly #open = new Set<Socket>()
  #closedRead = 0
  #closedWritten = 0

  /** Starts counting a client's socket (once per connection; a second call is ignored). */
  track (socket: Socket): void {
    if (this.#open.has(socket)) return
    if (socket.closed) {
      this.#closedRead += socket.bytesRead
      this.#closedWritten += socket.bytesWritten
      return
    }
    this.#open.add(socket)
    socket.once('close', () => {
      this.#open.delete(socket)
      this.#closedRead += socket.bytesRead
      this.#closedWritten += socket.bytesWritten
    })
  }

  received (): number {
    let total = this.#closedRead
    for (const socket of this.#open) total += socket.bytesRead
    return total
  }

  sent (): number {
    let total = this.#closedWritten
    for (const socket of this.#open) total += socket.bytesWritten
    return total
  }

  /** Open client sockets being counted (the system monitor looks at their write buffers). */
  sockets (): IterableIterator<Socket> {
    return this.#open.values()
  }
}
