// What broker_management offers the node's other administration plugins
// through `ctx.provide` (read with `ctx.capability('administration')
// .provided(MANAGEMENT_PLUGIN)`): its v3 API mounted on another hapi server,
// and its administrator users' logins. broker_dashboard serves the console's
// API with it, so the route table, roles, users and the failed-login budget
// stay one copy, in broker_management.
import type { Server } from '@hapi/hapi'

export const MANAGEMENT_PLUGIN = 'broker_management'

export type AdministratorRole = 'administrator' | 'viewer'

/** `ok`: the password is right; `retryAfter` (seconds): refused unchecked, the source used up its failed logins. */
export type LoginOutcome = { ok: true } | { ok: false, retryAfter?: number }

/** The auth strategy of `v3Server`'s server: a request injected with `auth: { strategy: V3_CALLER_STRATEGY, credentials: { user, role } }` is that administrator's; one injected without is refused 401. */
export const V3_CALLER_STRATEGY = 'v3-caller'

export interface ManagementApi {
  /**
   * A hapi server (not listening: `server.inject` requests into it) serving
   * every route of the v3 API and the plugins' routes under it, with the
   * same validation, answers and refusals as the management listener; a 401
   * carries no `WWW-Authenticate` (a page's fetch must not make the browser
   * ask for a password). The caller stops it when done with it.
   */
  v3Server: () => Promise<Server>
  /** Checks an administrator user's password, within `source`'s failed-login budget (`management.login_rate`, shared with the API). */
  login: (source: string, username: string, password: string) => Promise<LoginOutcome>
  /** The user's role now; undefined when there is no such user. */
  role: (username: string) => Promise<AdministratorRole | undefined>
  /** Stores a new password (hashed) for an existing user. */
  setPassword: (username: string, password: string) => Promise<void>
}
