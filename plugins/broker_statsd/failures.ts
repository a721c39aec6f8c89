// Failures to reach the StatsD server (a name that does not resolve, a send
// the system refuses, an ICMP unreachable reported on a later send): each is
// counted; the log gets one warning, then at most one every `everyMs` with
// how many were not logged in between, so a server that is down for a day
// writes one line a minute, not one per metric.
import type { Logger } from '../../lib/plugin-kit/index.js'

export interface FailureFacts {
  /** failures since the plugin loaded */
  count: number
  /** the latest one: `CODE message` */
  last?: string
  /** ms since the epoch */
  last_at?: number
}

export class Failures {
  #count = 0
  #last: string | undefined
  #lastAt: number | undefined
  #loggedAt = -Infinity
  #unlogged = 0

  constructor (private readonly logger: Logger, private readonly server: string, private readonly everyMs = 60_000, private readonly now = Date.now) {}

  report (err: Error): void {
    const at = this.now()
    const code = (err as NodeJS.ErrnoException).code
    this.#count++
    this.#last = code === undefined ? err.message : `${code} ${err.message}`
    this.#lastAt = at
    if (at - this.#loggedAt < this.everyMs) {
      this.#unlogged++
      return
    }
    this.logger.warn({ err, server: this.server, notLogged: this.#unlogged }, `statsd: cannot send to ${this.server}${this.#unlogged > 0 ? ` (${this.#unlogged} more failures since the last warning)` : ''}`)
    this.#loggedAt = at
    this.#unlogged = 0
  }

  facts (): FailureFacts {
    return { count: this.#count, last: this.#last, last_at: this.#lastAt }
  }
}
