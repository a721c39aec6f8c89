// broker_auth_clientid: authentication by client id and password (SPEC §5.2,
// EMQ X 3.x emqx_auth_clientid). Client ids come from etc/plugins/
// broker_auth_clientid.conf and from `broker_ctl clientid add|update|del|list`
// and the management API, which call the functions exported here.
import { definePlugin } from '../../lib/plugins/contract.js'
import { CredentialTable, authenticator, credentialSchema, type CredentialConfig, type CredentialKind } from '../../lib/access/credentials.js'

export { CredentialError, type CredentialErrorCode } from '../../lib/access/credentials.js'

const KIND: CredentialKind = {
  plugin: 'broker_auth_clientid',
  prefix: 'auth.client',
  field: 'clientid',
  noun: 'client id',
  identify: (client) => client.clientId
}

/** The loaded instance, if any: set by load, cleared by unload. */
let table: CredentialTable | undefined

function loaded (): CredentialTable {
  if (table === undefined) throw new Error(`plugin ${KIND.plugin} is not loaded`)
  return table
}

/** Adds a client id (stored durably as a pbkdf2 hash). Throws CredentialError `exists` if it is configured or stored. */
export async function addClient (clientId: string, password: string): Promise<void> {
  await loaded().add(clientId, password)
}

/** Changes a client id's password; for a configured one this stores an overriding entry. Throws `missing` for an unknown id. */
export async function updateClient (clientId: string, password: string): Promise<void> {
  await loaded().update(clientId, password)
}

/** Deletes a stored client id. Throws `missing` for an unknown id, `configured` for one only in the conf file. */
export async function deleteClient (clientId: string): Promise<void> {
  await loaded().delete(clientId)
}

/** Configured and stored client ids, sorted. */
export async function listClients (): Promise<string[]> {
  return await loaded().list()
}

// The API is also on the default export: PluginHost.module(name) returns that object.
export default Object.assign(definePlugin<CredentialConfig>({
  name: KIND.plugin,
  version: '0.1.0',
  description: 'Authentication with ClientId/Password',
  schema: credentialSchema(KIND),
  async load (ctx) {
    if (table !== undefined) throw new Error(`plugin ${KIND.plugin} is already loaded`)
    const opened = await CredentialTable.open(KIND, ctx.config, ctx.store, ctx.logger)
    if (table !== undefined) throw new Error(`plugin ${KIND.plugin} is already loaded`)
    ctx.hooks.add('client.authenticate', authenticator(opened))
    table = opened
  },
  unload () {
    table = undefined
  }
}), { addClient, updateClient, deleteClient, listClients })
