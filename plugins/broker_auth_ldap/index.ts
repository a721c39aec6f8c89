// broker_auth_ldap: authentication from an LDAP directory (EMQ X 3.x
// emqx_auth_ldap): the entry at `auth_dn` (with `%u`, `%c` escaped) is read
// as `bind_dn`, and the CONNECT password is checked against its
// userPassword. See README.md.
import { backendAuthenticator, backendGuard, definePlugin, fillTemplate, serverText, type Logger, type QueryValues, type StoredUser, type TemplatePart } from '../../lib/plugin-kit/index.js'
import { Directory } from './directory.js'
import { escapeDnValue, escapeFilterValue, firstRdnValue } from './escape.js'
import { schema, type AuthLdapConfig } from './settings.js'
import { ldapPasswordChecker } from './user-password.js'

export { schema, type AuthLdapConfig } from './settings.js'

const NAME = 'broker_auth_ldap'

/** `attr` when the parts are `<attr>=%u` then the end or `close` (`cn=%u,ou=…`, `(uid=%u)`). */
function namingAttribute (parts: TemplatePart[], open: string, close: RegExp): string | undefined {
  const [first, second, third] = parts
  if (first === undefined || !('literal' in first) || second === undefined || !('placeholder' in second) || second.placeholder !== '%u') return undefined
  if (third !== undefined && !('literal' in third && close.test(third.literal))) return undefined
  return new RegExp(`^${open}\\s*([A-Za-z][A-Za-z0-9-]*)\\s*=$`).exec(first.literal)?.[1]
}

/**
 * The attribute the user name is matched as, when the entry's DN names the
 * user by it: the first RDN of `auth_dn` is `<attr>=%u`, or the filter is
 * `(<attr>=%u)`. LDAP compares names ignoring case and extra spaces, so the
 * entry's own RDN value is the user name the node then knows the client by.
 */
function userNameAttribute (config: AuthLdapConfig): string | undefined {
  return namingAttribute(config['auth.ldap.auth_dn'], '', /^[,+]/) ?? namingAttribute(config['auth.ldap.filter'], '\\(', /^\)$/)
}

/** The user's entry and its first password value; undefined when there is none (or, logged, more than one). */
function finder (dir: Directory, config: AuthLdapConfig, logger: Logger): (values: QueryValues) => Promise<StoredUser | undefined> {
  const nameAttribute = userNameAttribute(config)
  return async (values) => {
    const base = fillTemplate(config['auth.ldap.auth_dn'], values, escapeDnValue)
    const filter = fillTemplate(config['auth.ldap.filter'], values, escapeFilterValue)
    if (base === undefined || filter === undefined) return undefined
    const entries = await dir.search(base, config['auth.ldap.scope'], filter, config['auth.ldap.password_attribute'])
    if (entries.length > 1) {
      logger.warn({ base, filter, dns: entries.map((e) => e.dn) }, 'LDAP lookup found more than one entry; the client is ignored')
      return undefined
    }
    if (entries.length === 0) return undefined
    const [password] = entries[0].passwords
    // an entry without a password cannot be authenticated: an empty stored value matches no password
    const user: StoredUser = { password: password ?? '\0' }
    const username = nameAttribute === undefined ? undefined : firstRdnValue(entries[0].dn, nameAttribute)
    if (username !== undefined) user.username = username
    return user
  }
}

export default definePlugin<AuthLdapConfig>({
  name: NAME,
  version: '0.1.0',
  description: 'Authentication from an LDAP directory',
  schema,
  async load (ctx) {
    const config = ctx.config
    const server = `LDAP ${config['auth.ldap.servers'].map(serverText).join(',')}`
    const directory = new Directory(config)
    const guard = backendGuard(ctx, server, config['auth.ldap.timeout'], () => directory.close())
    const check = ldapPasswordChecker(config['auth.ldap.password_hash'])
    ctx.hooks.add('client.authenticate', backendAuthenticator({
      guard,
      checkPassword: async (password, stored) => stored !== '\0' && await check(password, stored),
      queries: { findUser: finder(directory, config, ctx.logger) },
      unavailable: config['auth.ldap.unavailable.auth'],
      logger: ctx.logger
    }))
    ctx.logger.info({ server, pool: config['auth.ldap.pool'] }, 'LDAP authentication ready')
  }
})
