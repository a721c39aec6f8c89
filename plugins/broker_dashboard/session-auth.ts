// How the console's requests authenticate: the session cookie (HttpOnly,
// SameSite=Strict, Path=/, Secure on HTTPS) names a session (sessions.ts);
// its user's role is read from broker_management's administrator users at
// each request, so a removed user or a role change takes effect at once.
// Every request that may change something (any method but GET and HEAD)
// under /api/, but the login itself, must also send the session's CSRF
// token in `x-csrf-token`: without a session it is refused 401, with a wrong
// or missing token 403.
import Boom from '@hapi/boom'
import type Hapi from '@hapi/hapi'
import type { AdministratorRole, ManagementApi } from '../../lib/plugin-kit/admin.js'
import { csrfMatches, type Session, type Sessions } from './sessions.js'

export const COOKIE_NAME = 'broker_dashboard_session'
export const SESSION_STRATEGY = 'dashboard-session'
export const CSRF_HEADER = 'x-csrf-token'
export const LOGIN_PATH = '/api/login'
const SAFE_METHODS: readonly string[] = Object.freeze(['get', 'head', 'options'])

export interface SessionCredentials { user: string, role: AdministratorRole, session: Session }

/** broker_management's API, or a 503 naming it while it is not loaded. */
export type ManagementLookup = () => ManagementApi

function sessionOf (request: Hapi.Request, sessions: Sessions): Session | undefined {
  const value = (request.state as Record<string, unknown> | null)?.[COOKIE_NAME]
  return sessions.touch(typeof value === 'string' ? value : undefined)
}

export function sessionAuth (server: Hapi.Server, sessions: Sessions, management: ManagementLookup): void {
  server.state(COOKIE_NAME, { isHttpOnly: true, isSameSite: 'Strict', path: '/', isSecure: server.info.protocol === 'https', encoding: 'none', strictHeader: true, ignoreErrors: true, clearInvalid: true })
  server.auth.scheme(SESSION_STRATEGY, () => ({
    authenticate: async (request, h) => {
      const session = sessionOf(request, sessions)
      if (session === undefined) throw Boom.unauthorized('not logged in', 'Session')
      const role = await management().role(session.user)
      if (role === undefined) {
        sessions.end(session.token)
        throw Boom.unauthorized('not logged in', 'Session')
      }
      const credentials: SessionCredentials = { user: session.user, role, session }
      return h.authenticated({ credentials })
    }
  }))
  server.auth.strategy(SESSION_STRATEGY, SESSION_STRATEGY)
  server.ext('onPreAuth', (request, h) => {
    if (SAFE_METHODS.includes(request.method) || !request.path.startsWith('/api/') || request.path === LOGIN_PATH) return h.continue
    const session = sessionOf(request, sessions)
    if (session === undefined) throw Boom.unauthorized('not logged in', 'Session')
    const sent = request.headers[CSRF_HEADER]
    if (!csrfMatches(session, typeof sent === 'string' ? sent : undefined)) throw Boom.forbidden('missing or wrong CSRF token')
    return h.continue
  })
}
