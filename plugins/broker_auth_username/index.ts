// broker_auth_username: authentication by user name and password (SPEC §5.2,
// EMQ X 3.x emqx_auth_username). Users come from etc/plugins/
// broker_auth_username.conf and from `broker_ctl users add|update|del|list`
// and the management API, which call the functions exported here. MQTT 5
// clients may also authenticate with SCRAM-SHA-256 (enhanced authentication).
import { credentialPlugin, scramAuthenticator } from '../../lib/access/credentials.js'

export { CredentialError, type CredentialErrorCode } from '../../lib/access/credentials.js'

const users = credentialPlugin(
  {
    plugin: 'broker_auth_username',
    prefix: 'auth.user',
    field: 'username',
    noun: 'user',
    command: { name: 'users', id: '<Username>' },
    identify: (client) => client.username
  },
  'Authentication with Username and Password',
  (ctx, table) => ctx.hooks.add('client.enhanced_auth', scramAuthenticator(table))
)

/** Adds a user (stored durably as a pbkdf2 hash). Throws CredentialError `exists` if the user is configured or stored. */
export const addUser = users.add
/** Changes a user's password; for a configured user this stores an overriding entry. Throws `missing` for an unknown user. */
export const updateUser = users.update
/** Deletes a stored user. Throws `missing` for an unknown user, `configured` for one only in the conf file. */
export const deleteUser = users.delete
/** Configured and stored user names, sorted. */
export const listUsers = users.list

export default Object.assign(users.plugin, { addUser, updateUser, deleteUser, listUsers })
