// broker_auth_clientid: authentication by client id and password (SPEC §5.2,
// EMQ X 3.x emqx_auth_clientid). Client ids come from etc/plugins/
// broker_auth_clientid.conf and from `broker_ctl clientid add|update|del|list`
// and the management API, which call the table each load offers
// (`ctx.provide`, a CredentialApi).
//
// A client id registered here is claimed: only its own password admits it,
// whatever plugin comes before this one in the chain (a broker_auth_username
// user cannot connect with it). So its handler runs first, and an MQTT 5
// enhanced authentication exchange (which carries no password) is refused
// for it.
import { credentialPlugin, type EnhancedAuthAnswer } from '../../lib/plugin-kit/index.js'

/** Above every plugin's default 0: a registered client id is decided here first. */
export const CLAIMED_CLIENT_ID_PRIORITY = 1000

const REFUSED: EnhancedAuthAnswer = { result: 'deny', reason: 'bad_username_or_password' }

export { CredentialError, type CredentialApi, type CredentialErrorCode } from '../../lib/plugin-kit/index.js'

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

export default clients
