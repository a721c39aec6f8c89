// Admission control for one listener: at most `maxConnections` open sockets,
// and new connections accepted at no more than `maxConnRate` per second (a
// token bucket holding one second's worth). A socket over the rate waits
// (unread: its bytes stay in the kernel buffer) until a token frees up — those already connected are never touched.
// A socket over the connection limit is closed at once.
import type { Socket } from 'node:net'

/** Sockets waiting for a token beyond this many seconds' worth are refused. */
const MAX_WAIT_SECONDS = 10

export interface GateCounters { current: number, refused: number, closed: number }

export class ConnectionGate {
  readonly counters: GateCounters = { current: 0, refused: 0, closed: 0 }
  #tokens: number
  #refilledAt = Date.now()
  readonly #waiting: Array<{ socket: Socket, admit: () => void }> = []
  #timer: NodeJS.Timeout | null = null

  constructor (public maxConnections: number, public maxConnRate: number) {
    this.#tokens = maxConnRate
  }

  /** Calls `admit` now, later (rate), or never (limit reached: the socket is closed). */
  admit (socket: Socket, admit: () => void): void {
    if (this.counters.current >= this.maxConnections) {
      this.counters.refused++
      socket.destroy()
      return
    }
    this.counters.current++
    socket.once('close', () => {
      this.counters.current--
      this.counters.closed++
    })
    if (this.maxConnRate === 0 || (this.#waiting.length === 0 && this.#take())) {
      admit()
      return
    }
    if (this.#waiting.length >= this.maxConnRate * MAX_WAIT_SECONDS) {
      this.counters.refused++
      socket.destroy()
      return
    }
    this.#waiting.push({ socket, admit })
    this.#schedule()
  }

  close (): void {
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
    for (const { socket } of this.#waiting.splice(0)) socket.destroy()
  }

  #take (): boolean {
    const now = Date.now()
    this.#tokens = Math.min(this.maxConnRate, this.#tokens + (now - this.#refilledAt) * this.maxConnRate / 1000)
    this.#refilledAt = now
    if (this.#tokens < 1) return false
    this.#tokens--
    return true
  }

  #schedule (): void {
    if (this.#timer) return
    const wait = Math.max(1, Math.ceil((1 - this.#tokens) * 1000 / this.maxConnRate))
    this.#timer = setTimeout(() => {
      this.#timer = null
      while (this.#waiting.length > 0 && this.#take()) {
        const { socket, admit } = this.#waiting.shift()!
        if (socket.destroyed) continue
        admit()
      }
      if (this.#waiting.length > 0) this.#schedule()
    }, wait)
  }
}
