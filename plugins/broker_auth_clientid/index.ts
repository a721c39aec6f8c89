// broker_auth_clientid: authentication by client id and password (SPEC §5.2,
// EMQ X 3.x emqx_auth_clientid). Client ids come from etc/plugins/
// broker_auth_clientid.conf and from `broker_ctl clientid add|update|del|list`
// and the management API, which call the functions exported here.
//
// A client id registered here is claimed: only its own password admits it,
// whatever plugin comes before this one in the chain (a broker_auth_username
// user cannot connect with it). So its handler runs first, and an MQTT 5
// enhanced authentication exchange (which carries no password) is refused
// for it.
import { credentialPlugin } from '../../lib/access/credentials.js'
import type { EnhancedAuthAnswer } from '../../lib/plugins/contract.js'

/** Above every plugin's default 0: a registered client id is decided here first. */
export const CLAIMED_CLIENT_ID_PRIORITY = 1000

const REFUSED: EnhancedAuthAnswer = { result: 'deny', reason: 'bad_username_or_password' }

export { CredentialError, type CredentialErrorCode } from '../../lib/access/credentials.js'

const clients = credentialPlugin(
  {
    plugin: 'broker_auth_clientid',
    prefix: 'auth.client',
    field: 'clientid',
    noun: 'client id',
    command: { name: 'clientid', id: '<ClientId>' },
    identify: (client) => client.clientId,
    priority: CLAIMED_CLIENT_ID_PRIORITY
  },
  'Authentication with ClientId/Password',
  (ctx, table) => ctx.hooks.add('client.enhanced_auth', async ({ client }) => await table.has(client.clientId) ? REFUSED : 'ignore', CLAIMED_CLIENT_ID_PRIORITY)
)

/** Adds a client id (stored durably as a pbkdf2 hash). Throws CredentialError `exists` if it is configured or stored. */
export const addClient = clients.add
/** Changes a client id's password; for a configured one this stores an overriding entry. Throws `missing` for an unknown id. */
export const updateClient = clients.update
/** Deletes a stored client id. Throws `missing` for an unknown id, `configured` for one only in the conf file. */
export const deleteClient = clients.delete
/** Configured and stored client ids, sorted. */
export const listClients = clients.list

export default Object.assign(clients.plugin, { addClient, updateClient, deleteClient, listClients })
