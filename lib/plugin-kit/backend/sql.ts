// The auth, super and ACL queries of the SQL plugins (mysql, pgsql), read by
// column position as EMQ X 3.x did: auth → password[, salt]; super → one
// truthy column; ACL → allow, ipaddr, username, clientid, access, topic.
// One addition in the auth query: a column named `username`, wherever it
// stands (and not counted in the positions), is the user name as stored —
// the name the client is known by after it authenticates, so that a
// case-insensitive or space-padding collation letting `ALICE` or `alice `
// in as alice cannot sidestep rules and bans keyed on `alice`.
// Placeholders are bound parameters (see placeholders.ts).
import { aclRuleOfRow, type AclRule } from './acl-rules.js'
import type { PluginContext } from '../contract.js'
import type { BackendGuard } from './guard.js'
import { backendAclChecker, backendAuthenticator, isTrue, type BackendQueries, type StoredUser } from './handlers.js'
import { passwordChecker } from './password.js'
import { sqlWithParameters, type QueryValues } from './placeholders.js'
import type { UnavailableAcl, UnavailableAuth } from './settings.js'

/** The rows as arrays of column values, and the column names. */
export interface SqlResult { rows: unknown[][], columns: string[] }

/** Runs one parameterised statement. */
export type SqlRunner = (text: string, params: Array<string | null>) => Promise<SqlResult>

export interface SqlQueryTexts {
  auth: string
  /** undefined or empty: no super query */
  superuser?: string
  /** undefined or empty: no ACL */
  acl?: string
}

export interface SqlBackend {
  queries: BackendQueries
  /** undefined when there is no ACL query */
  aclRules?: (values: QueryValues) => Promise<AclRule[]>
}

function text (value: unknown): string | undefined {
  if (value === null || value === undefined) return undefined
  return Buffer.isBuffer(value) ? value.toString('utf8') : String(value)
}

export function sqlBackend (texts: SqlQueryTexts, marker: (index: number) => string, run: SqlRunner): SqlBackend {
  const query = async (template: string, values: QueryValues): Promise<SqlResult> => {
    const { text, params } = sqlWithParameters(template, values, marker)
    return await run(text, params)
  }
  const findUser = async (values: QueryValues): Promise<StoredUser | undefined> => {
    const { rows: [row], columns } = await query(texts.auth, values)
    if (row === undefined) return undefined
    const nameAt = columns.findIndex((column) => column.toLowerCase() === 'username')
    const [password, salt] = (nameAt < 0 ? row : row.filter((_, i) => i !== nameAt)).map(text)
    const user: StoredUser = { password }
    if (salt !== undefined) user.salt = salt
    const username = nameAt < 0 ? undefined : text(row[nameAt])
    if (username !== undefined) user.username = username
    return user
  }
  const superText = texts.superuser
  const queries: BackendQueries = superText === undefined || superText === ''
    ? { findUser }
    : { findUser, isSuperuser: async (values) => isTrue((await query(superText, values)).rows[0]?.[0]) }
  const aclText = texts.acl
  if (aclText === undefined || aclText === '') return { queries }
  const aclRules = async (values: QueryValues): Promise<AclRule[]> => {
    const rules: AclRule[] = []
    for (const row of (await query(aclText, values)).rows) {
      const rule = aclRuleOfRow({ allow: row[0], ipaddr: row[1], username: row[2], clientid: row[3], access: row[4], topic: row[5] })
      if (rule !== undefined) rules.push(rule)
    }
    return rules
  }
  return { queries, aclRules }
}

/** The settings an SQL plugin's hooks read, under its prefix (`auth.mysql`, `auth.pgsql`). */
export interface SqlHookSettings {
  texts: SqlQueryTexts
  passwordHash: string
  unavailableAuth: UnavailableAuth
  unavailableAcl: UnavailableAcl
}

/** Adds the auth hook (and the ACL hook when there is an ACL query) of an SQL plugin, and says at load whether the server answers. */
export function addSqlHooks (ctx: PluginContext<unknown>, guard: BackendGuard, settings: SqlHookSettings, marker: (index: number) => string, run: SqlRunner): SqlBackend {
  const backend = sqlBackend(settings.texts, marker, run)
  ctx.hooks.add('client.authenticate', backendAuthenticator({
    guard,
    checkPassword: passwordChecker(settings.passwordHash),
    queries: backend.queries,
    unavailable: settings.unavailableAuth,
    logger: ctx.logger
  }))
  if (backend.aclRules !== undefined) {
    ctx.hooks.add('client.check_acl', backendAclChecker({ guard, rules: backend.aclRules, unavailable: settings.unavailableAcl, logger: ctx.logger }))
  }
  // tells an outage at load (log and alarm) instead of at the first CONNECT
  void guard.run(async () => await run('select 1', []))
  return backend
}
