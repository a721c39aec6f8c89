// HTTP cookie authentication of the management APIs (SPEC §5.2.1 names the
// HTTP cookie among the ways to authenticate): a successful `POST /auth`
// (v3 or v2) with an administrator's user name and password answers with a
// session cookie; a request that carries it is authenticated as that user,
// in place of HTTP Basic, on both APIs, until the session ends
// (SESSION_TTL_MS after the login) or the user is removed. The cookie is
// HttpOnly and SameSite=Strict (a page of another site cannot make the
// browser send it), Secure on the HTTPS listener.
import { randomBytes } from 'node:crypto'
import Boom from '@hapi/boom'
import type Hapi from '@hapi/hapi'
import { roleOfTags, type Role } from './roles.js'
import type { Users } from './users.js'

export const COOKIE_STRATEGY = 'session-cookie'
export const COOKIE_NAME = 'broker_session'
export const SESSION_TTL_MS = 30 * 60_000

/** The logged-in administrators' sessions, by cookie value; shared by the HTTP and HTTPS servers. */
export class CookieSessions {
  readonly #sessions = new Map<string, { user: string, until: number }>()

  constructor (private readonly users: Users) {}

  open (user: string): string {
    this.#sweep()
    const token = randomBytes(32).toString('base64url')
    this.#sessions.set(token, { user, until: Date.now() + SESSION_TTL_MS })
    return token
  }

  /** The session's user and the role its tags give now, while it lasts and the user exists. */
  async user (token: string): Promise<{ user: string, role: Role } | undefined> {
    const session = this.#sessions.get(token)
    if (session === undefined) return undefined
    const record = session.until <= Date.now() ? undefined : await this.users.get(session.user)
    if (record === undefined) {
      this.#sessions.delete(token)
      return undefined
    }
    return { user: session.user, role: roleOfTags(record.tags ?? '') }
  }

  #sweep (): void {
    const now = Date.now()
    for (const [token, session] of this.#sessions) if (session.until <= now) this.#sessions.delete(token)
  }
}

function cookieValue (header: string | undefined): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const at = part.indexOf('=')
    if (at > 0 && part.slice(0, at).trim() === COOKIE_NAME) return part.slice(at + 1).trim()
  }
  return undefined
}

/**
 * Adds the cookie strategy to `server`, and the cookie to each successful
 * `POST <base>/auth` answer of `bases`. A request without a valid cookie is
 * "missing" credentials here, so the route's other strategy (Basic) decides.
 */
export function cookieAuth (server: Hapi.Server, sessions: CookieSessions, bases: readonly string[]): void {
  server.auth.scheme(COOKIE_STRATEGY, () => ({
    authenticate: async (request, h) => {
      const token = cookieValue(request.headers.cookie as string | undefined)
      const credentials = token === undefined ? undefined : await sessions.user(token)
      if (credentials === undefined) throw Boom.unauthorized(null, 'Cookie')
      return h.authenticated({ credentials })
    }
  }))
  server.auth.strategy(COOKIE_STRATEGY, COOKIE_STRATEGY)
  const logins = new Set(bases.map((base) => `${base}/auth`))
  const secure = server.info.protocol === 'https' ? '; Secure' : ''
  server.ext('onPreResponse', (request, h) => {
    const response = request.response
    if (request.method !== 'post' || !logins.has(request.path) || ('isBoom' in response && response.isBoom) || (response as Hapi.ResponseObject).statusCode !== 200) return h.continue
    const { username } = request.payload as { username: string }
    const cookie = `${COOKIE_NAME}=${sessions.open(username)}; Path=/api; Max-Age=${SESSION_TTL_MS / 1000}; HttpOnly; SameSite=Strict${secure}`
    return (response as Hapi.ResponseObject).header('Set-Cookie', cookie)
  })
}
