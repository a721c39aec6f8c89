// Per-session message counters of the session records (SPEC §2.3
// `deliver_msg`, `enqueue_msg`): kept by client id, so a persistent session's
// counts go on across its connections, and forgotten when the session ends.
export interface SessionCounts {
  /** PUBLISH packets written to the client (retries included) */
  delivered: number
  /** messages that could not be sent at once: held while the in-flight window was full, or stored while the client was offline */
  enqueued: number
}

export class SessionCounters {
  readonly #counts = new Map<string, SessionCounts>()

  /** The session's counts, made on first use. */
  of (clientId: string): SessionCounts {
    let counts = this.#counts.get(clientId)
    if (counts === undefined) {
      counts = { delivered: 0, enqueued: 0 }
      this.#counts.set(clientId, counts)
    }
    return counts
  }

  get (clientId: string): Readonly<SessionCounts> {
    return this.#counts.get(clientId) ?? { delivered: 0, enqueued: 0 }
  }

  forget (clientId: string): void {
    this.#counts.delete(clientId)
  }
}
