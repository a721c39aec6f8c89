// broker_auth_clientid: authentication by client id and password (SPEC §5.2,
// EMQ X 3.x emqx_auth_clientid). Client ids come from etc/plugins/
// broker_auth_clientid.conf and from `broker_ctl clientid add|update|del|list`
// and the management API, which call the functions exported here.
import { credentialPlugin } from '../../lib/access/credentials.js'

export { CredentialError, type CredentialErrorCode } from '../../lib/access/credentials.js'

const clients = credentialPlugin(
  {
    plugin: 'broker_auth_clientid',
    prefix: 'auth.client',
    field: 'clientid',
    noun: 'client id',
    command: { name: 'clientid', id: '<ClientId>' },
    identify: (client) => client.clientId
  },
  'Authentication with ClientId/Password'
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
