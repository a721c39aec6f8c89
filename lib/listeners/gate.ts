// Admission control for one listener: at most `maxConnections` open sockets,
// and new connections accepted at no more than `maxConnRate` per second (a
// token bucket holding one second's worth). A socket over the rate waits
// (unread: its bytes stay in the kernel buffer) until a token frees up; those
// already connected are never touched. A socket that cannot be admitted is
// refused: it is handed on briefly so its CONNECT gets a CONNACK saying why
// (MQTT 5: 0x97 quota exceeded, 0x89 server busy; 3.x: 3 server unavailable),
// at most REFUSING_AT_ONCE at a time, each for at most REFUSAL_GRACE_MS.
import type { Socket } from 'node:net'

/** Sockets waiting for a token beyond this many seconds' worth are refused. */
const MAX_WAIT_SECONDS = 10
const REFUSING_AT_ONCE = 64
const REFUSAL_GRACE_MS = 2000

export type Refusal = 'quota_exceeded' | 'server_busy'

export interface GateCounters {
  current: number
  refused: number
  closed: number
  /** connections closed for a missing, bad or late PROXY protocol header */
  proxyRefused: number
}

export class ConnectionGate {
  readonly counters: GateCounters = { current: 0, refused: 0, closed: 0, proxyRefused: 0 }
  #tokens: number
  #refilledAt = Date.now()
  #refusing = 0
  readonly #waiting: Array<{ socket: Socket, admit: () => void }> = []
  #timer: NodeJS.Timeout | null = null
  /** one listener for every socket ('close' comes once): no closure or once-wrapper per connection */
  readonly #closed = (): void => {
    this.counters.current--
    this.counters.closed++
  }

  constructor (public maxConnections: number, public maxConnRate: number) {
    this.#tokens = maxConnRate
  }

  /**
   * Calls `admit` now or later (rate), or `refuse` with the reason; a refused
   * socket is closed after a short grace whatever happens to it.
   */
  admit (socket: Socket, admit: () => void, refuse: (reason: Refusal) => void): void {
    if (this.counters.current >= this.maxConnections) {
      this.#refuse(socket, refuse, 'quota_exceeded')
      return
    }
    this.counters.current++
    socket.on('close', this.#closed)
    if (this.maxConnRate === 0 || (this.#waiting.length === 0 && this.#take())) {
      admit()
      return
    }
    if (this.#waiting.length >= this.maxConnRate * MAX_WAIT_SECONDS) {
      this.#refuse(socket, refuse, 'server_busy')
      return
    }
    this.#waiting.push({ socket, admit })
    this.#schedule()
  }

  /** New limits (a setting changed at run time): they apply to the next sockets; those connected are never touched. */
  setLimits (maxConnections: number, maxConnRate: number): void {
    this.maxConnections = maxConnections
    this.maxConnRate = maxConnRate
    this.#tokens = Math.min(this.#tokens, maxConnRate)
    if (maxConnRate === 0) {
      if (this.#timer) clearTimeout(this.#timer)
      this.#timer = null
      for (const { socket, admit } of this.#waiting.splice(0)) if (!socket.destroyed) admit()
    }
  }

  close (): void {
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
    for (const { socket } of this.#waiting.splice(0)) socket.destroy()
  }

  #refuse (socket: Socket, refuse: (reason: Refusal) => void, reason: Refusal): void {
    this.counters.refused++
    if (this.#refusing >= REFUSING_AT_ONCE) {
      socket.destroy()
      return
    }
    this.#refusing++
    const timer = setTimeout(() => socket.destroy(), REFUSAL_GRACE_MS)
    socket.once('close', () => {
      this.#refusing--
      clearTimeout(timer)
    })
    refuse(reason)
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
