// The console's login sessions, in the node's memory (a restart or a reload
// of the plugin ends them; another node of a cluster does not know them).
// A session is a random cookie value and a random CSRF token the page sends
// back in `x-csrf-token` with every change; it ends at logout, after
// `dashboard.session_timeout` without a request, or when its user is gone.
import { randomBytes, timingSafeEqual } from 'node:crypto'

/** The most sessions held: a new login past it ends the least recently used one. */
export const MAX_SESSIONS = 1000

export interface Session { token: string, user: string, csrf: string, lastSeen: number }

export class Sessions {
  /** by token, least recently used first */
  readonly #sessions = new Map<string, Session>()

  constructor (private readonly idleMs: () => number, private readonly now: () => number = Date.now) {}

  open (user: string): Session {
    const session = { token: randomToken(), user, csrf: randomToken(), lastSeen: this.now() }
    this.#sessions.set(session.token, session)
    for (const oldest of this.#sessions.keys()) {
      if (this.#sessions.size <= MAX_SESSIONS) break
      this.#sessions.delete(oldest)
    }
    return session
  }

  /** The live session of this cookie value, marked as used now; undefined when there is none. */
  touch (token: string | undefined): Session | undefined {
    const session = token === undefined ? undefined : this.#sessions.get(token)
    if (session === undefined) return undefined
    this.#sessions.delete(session.token)
    if (this.now() - session.lastSeen >= this.idleMs()) return undefined
    session.lastSeen = this.now()
    this.#sessions.set(session.token, session)
    return session
  }

  end (token: string): void {
    this.#sessions.delete(token)
  }

  /** Ends every session of `user` but `keep` (after a password change). */
  endOthers (user: string, keep: string): void {
    for (const session of [...this.#sessions.values()]) if (session.user === user && session.token !== keep) this.#sessions.delete(session.token)
  }

  get size (): number {
    return this.#sessions.size
  }

  clear (): void {
    this.#sessions.clear()
  }
}

export function csrfMatches (session: Session, sent: string | undefined): boolean {
  if (sent === undefined) return false
  const expected = Buffer.from(session.csrf)
  const given = Buffer.from(sent)
  return given.length === expected.length && timingSafeEqual(given, expected)
}

function randomToken (): string {
  return randomBytes(32).toString('base64url')
}
