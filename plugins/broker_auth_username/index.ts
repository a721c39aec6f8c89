// broker_auth_username: authentication by user name and password (SPEC §5.2,
// EMQ X 3.x emqx_auth_username). Users come from etc/plugins/
// broker_auth_username.conf and from `broker_ctl users add|update|del|list`
// and the management API, which call the table each load offers
// (`ctx.provide`, a CredentialApi). MQTT 5
// clients may also authenticate with SCRAM-SHA-256 (enhanced authentication).
import { credentialPlugin, scramAuthenticator } from '../../lib/plugin-kit/index.js'

export { CredentialError, type CredentialApi, type CredentialErrorCode } from '../../lib/plugin-kit/index.js'

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

export default users
