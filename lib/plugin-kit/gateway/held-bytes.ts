// A gateway client's byte counts (the connections API's recv_oct/send_oct,
// the node's bytes metrics) go to its link; the bytes it moved before the
// link existed (a CONNECT frame, a Register) are held until the link opens.
import type { GatewayLink } from '../contract.js'

export class HeldBytes {
  #received = 0
  #sent = 0

  /** Counts on `link` when there is one, else holds the bytes for the next `flushTo`. */
  count (link: GatewayLink | undefined, received: number, sent: number): void {
    if (link !== undefined) {
      link.countBytes(received, sent)
      return
    }
    this.#received += received
    this.#sent += sent
  }

  /** Hands the held bytes to a link just opened. */
  flushTo (link: GatewayLink): void {
    link.countBytes(this.#received, this.#sent)
    this.#received = 0
    this.#sent = 0
  }
}
