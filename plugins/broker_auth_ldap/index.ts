// broker_auth_ldap: authentication from an LDAP directory (EMQ X 3.x
// emqx_auth_ldap): the entry at `auth_dn` (with `%u`, `%c` escaped) is read
// as `bind_dn`, and the CONNECT password is checked against its
// userPassword. See README.md.
import { BackendGuard, BackendSlot } from '../../lib/access/backend/guard.js'
import { backendAuthenticator, type StoredUser } from '../../lib/access/backend/handlers.js'
import { fillTemplate, type QueryValues } from '../../lib/access/backend/placeholders.js'
import { serverText } from '../../lib/access/backend/settings.js'
import type { Logger } from '../../lib/log.js'
import { definePlugin } from '../../lib/plugins/contract.js'
import { Directory } from './directory.js'
import { escapeDnValue, escapeFilterValue } from './escape.js'
import { schema, type AuthLdapConfig } from './settings.js'
import { ldapPasswordChecker } from './user-password.js'

export { schema, type AuthLdapConfig } from './settings.js'

const NAME = 'broker_auth_ldap'

const slot = new BackendSlot()

/** The user's entry and its first password value; undefined when there is none (or, logged, more than one). */
function finder (dir: Directory, config: AuthLdapConfig, logger: Logger): (values: QueryValues) => Promise<StoredUser | undefined> {
  return async (values) => {
    const base = fillTemplate(config['auth.ldap.auth_dn'], values, escapeDnValue)
    const filter = fillTemplate(config['auth.ldap.filter'], values, escapeFilterValue)
    if (base === undefined || filter === undefined) return undefined
    const entries = await dir.search(base, config['auth.ldap.scope'], filter, config['auth.ldap.password_attribute'])
    if (entries.length > 1) {
      logger.warn({ base, filter, dns: entries.map((e) => e.dn) }, 'LDAP lookup found more than one entry; the client is ignored')
      return undefined
    }
    const [password] = entries[0]?.passwords ?? []
    // an entry without a password cannot be authenticated: an empty stored value matches no password
    return entries.length === 0 ? undefined : { password: password ?? '\0' }
  }
}

export default definePlugin<AuthLdapConfig>({
  name: NAME,
  version: '0.1.0',
  description: 'Authentication from an LDAP directory',
  schema,
  async load (ctx) {
    await slot.release()
    const config = ctx.config
    const server = `LDAP ${config['auth.ldap.servers'].map(serverText).join(',')}`
    const directory = new Directory(config)
    const guard = slot.hold(new BackendGuard({ plugin: NAME, server, timeoutMs: config['auth.ldap.timeout'], alarms: ctx.alarms, logger: ctx.logger }), () => directory.close())
    const check = ldapPasswordChecker(config['auth.ldap.password_hash'])
    ctx.hooks.add('client.authenticate', backendAuthenticator({
      guard,
      checkPassword: async (password, stored) => stored !== '\0' && await check(password, stored),
      queries: { findUser: finder(directory, config, ctx.logger) },
      unavailable: config['auth.ldap.unavailable.auth'],
      logger: ctx.logger
    }))
    ctx.logger.info({ server, pool: config['auth.ldap.pool'] }, 'LDAP authentication ready')
  },
  async unload () {
    await slot.release()
  }
})
