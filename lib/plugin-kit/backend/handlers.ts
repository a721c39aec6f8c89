// The client.authenticate and client.check_acl handlers of a database auth
// plugin, given how it finds a user, its superuser flag and its ACL rules
// (EMQ X 3.x semantics):
// - authenticate: no user found → ignore (next plugin); wrong or missing
//   password → deny; right → allow, superuser when the super query says so.
//   Server unavailable (error or timeout) → `unavailable.auth`: deny with
//   server_unavailable (MQTT 5 0x88, 3.x code 3) or ignore.
// - check_acl: the rules decide (decideAcl); none match → ignore. Server
//   unavailable → `unavailable.acl` (ignore or deny).
// Handlers never throw.
import type { Logger } from '../../log.js'
import type { AuthenticateAnswer, Decision, HookHandlers } from '../../hooks/types.js'
import { decideAcl, type AclRule } from './acl-rules.js'
import type { BackendGuard } from './guard.js'
import type { PasswordChecker } from './password.js'
import { valuesOf, type QueryValues } from './placeholders.js'
import type { UnavailableAcl, UnavailableAuth } from './settings.js'

export interface StoredUser {
  /** undefined (e.g. a NULL column): the user exists but no password can match → deny */
  password: string | undefined
  salt?: string
  /** when the auth query itself says (e.g. a Redis hash's is_superuser field) */
  superuser?: boolean
  /** the user name as the backend stores it, when the lookup says (see AuthenticateAnswer) */
  username?: string
}

export interface BackendQueries {
  /** the user's stored password (and salt), or undefined when there is no such user */
  findUser: (values: QueryValues) => Promise<StoredUser | undefined>
  /** absent: no super query */
  isSuperuser?: (values: QueryValues) => Promise<boolean>
}

export interface AuthDeps {
  guard: BackendGuard
  checkPassword: PasswordChecker
  queries: BackendQueries
  unavailable: UnavailableAuth
  logger: Logger
}

export function unavailableAuthAnswer (mode: UnavailableAuth): AuthenticateAnswer {
  return mode === 'ignore' ? 'ignore' : { result: 'deny', reason: 'server_unavailable' }
}

/** Truthy values of a superuser column or field: 1, true, `1`, `true`, `t`, `on`. */
export function isTrue (value: unknown): boolean {
  if (value === true || value === 1 || value === 1n) return true
  if (Buffer.isBuffer(value)) return isTrue(value.toString('utf8'))
  if (typeof value !== 'string') return false
  return ['1', 'true', 't', 'on', 'yes'].includes(value.trim().toLowerCase())
}

export function backendAuthenticator (deps: AuthDeps): HookHandlers['client.authenticate'] {
  return async (request): Promise<AuthenticateAnswer> => {
    try {
      const values = valuesOf(request.client, request.password)
      const found = await deps.guard.run(() => deps.queries.findUser(values))
      if (!found.ok) return unavailableAuthAnswer(deps.unavailable)
      const user = found.value
      if (user === undefined) return 'ignore'
      if (values.password === undefined || user.password === undefined || !await deps.checkPassword(values.password, user.password, user.salt)) {
        return { result: 'deny', reason: 'bad_username_or_password' }
      }
      let superuser = user.superuser ?? false
      if (!superuser && deps.queries.isSuperuser !== undefined) {
        const isSuperuser = deps.queries.isSuperuser
        const su = await deps.guard.run(() => isSuperuser(values))
        superuser = su.ok && su.value
      }
      return user.username === undefined ? { result: 'allow', superuser } : { result: 'allow', superuser, username: user.username }
    } catch (err) {
      deps.logger.error({ err, clientId: request?.client?.clientId }, 'database authentication failed; denied')
      return { result: 'deny', reason: 'not_authorized' }
    }
  }
}

export interface AclDeps {
  guard: BackendGuard
  /** the rules that may apply to this client (the ACL query's rows) */
  rules: (values: QueryValues) => Promise<AclRule[]>
  unavailable: UnavailableAcl
  logger: Logger
  /**
   * When the client has rules and none matches: `ignore` (SQL: rows may allow or
   * deny, EMQ X passed on) or `deny` (Redis, Mongo: the rules are the client's
   * whole allowance, EMQ X denied). No rules at all is always ignore.
   */
  nomatch?: 'ignore' | 'deny'
}

export function backendAclChecker (deps: AclDeps): HookHandlers['client.check_acl'] {
  return async (request): Promise<Decision> => {
    try {
      const values = valuesOf(request.client)
      const rules = await deps.guard.run(() => deps.rules(values))
      if (!rules.ok) return deps.unavailable
      const decision = decideAcl(rules.value, request)
      return decision === 'ignore' && rules.value.length > 0 && deps.nomatch === 'deny' ? 'deny' : decision
    } catch (err) {
      deps.logger.error({ err, clientId: request?.client?.clientId, topic: request?.topic }, 'database ACL check failed; ignored')
      return 'ignore'
    }
  }
}
