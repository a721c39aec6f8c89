// broker_auth_username: authentication by user name and password (SPEC §5.2,
// EMQ X 3.x emqx_auth_username). Users come from etc/plugins/
// broker_auth_username.conf and from `broker_ctl users add|update|del|list`
// and the management API, which call the functions exported here. MQTT 5
// clients may also authenticate with SCRAM-SHA-256 (enhanced authentication).
import { definePlugin } from '../../lib/plugins/contract.js'
import { CredentialTable, authenticator, credentialSchema, scramAuthenticator, type CredentialConfig, type CredentialKind } from '../../lib/access/credentials.js'

export { CredentialError, type CredentialErrorCode } from '../../lib/access/credentials.js'

const KIND: CredentialKind = {
  plugin: 'broker_auth_username',
  prefix: 'auth.user',
  field: 'username',
  noun: 'user',
  identify: (client) => client.username
}

/** The loaded instance, if any: set by load, cleared by unload. */
let table: CredentialTable | undefined

function loaded (): CredentialTable {
  if (table === undefined) throw new Error(`plugin ${KIND.plugin} is not loaded`)
  return table
}

/** Adds a user (stored durably as a pbkdf2 hash). Throws CredentialError `exists` if the user is configured or stored. */
export async function addUser (username: string, password: string): Promise<void> {
  await loaded().add(username, password)
}

/** Changes a user's password; for a configured user this stores an overriding entry. Throws `missing` for an unknown user. */
export async function updateUser (username: string, password: string): Promise<void> {
  await loaded().update(username, password)
}

/** Deletes a stored user. Throws `missing` for an unknown user, `configured` for one only in the conf file. */
export async function deleteUser (username: string): Promise<void> {
  await loaded().delete(username)
}

/** Configured and stored user names, sorted. */
export async function listUsers (): Promise<string[]> {
  return await loaded().list()
}

// The API is also on the default export: PluginHost.module(name) returns that object.
export default Object.assign(definePlugin<CredentialConfig>({
  name: KIND.plugin,
  version: '0.1.0',
  description: 'Authentication with Username and Password',
  schema: credentialSchema(KIND),
  async load (ctx) {
    if (table !== undefined) throw new Error(`plugin ${KIND.plugin} is already loaded`)
    const opened = await CredentialTable.open(KIND, ctx.config, ctx.store, ctx.logger)
    if (table !== undefined) throw new Error(`plugin ${KIND.plugin} is already loaded`)
    ctx.hooks.add('client.authenticate', authenticator(opened))
    // MQTT 5 enhanced authentication: SCRAM-SHA-256 over the same users
    ctx.hooks.add('client.enhanced_auth', scramAuthenticator(opened))
    table = opened
  },
  unload () {
    table = undefined
  }
}), { addUser, updateUser, deleteUser, listUsers })
