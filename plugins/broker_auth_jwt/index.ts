// broker_auth_jwt: authentication (and optional ACL) with JSON Web Tokens
// sent as the CONNECT password or username (SPEC §5.2 jwt row; EMQ X
// emqx_auth_jwt). See README.md for the answers it gives.
import { definePlugin, type AuthenticateAnswer, type AuthenticateRequest, type CheckAclRequest, type Decision, type PluginContext } from '../../lib/plugin-kit/index.js'
import { aclAllows, aclFromClaims, AclTable, connectionKey, type TokenAcl } from './acl.js'
import { expectedClaims, requiresExp, schema, type JwtConfig } from './config.js'
import { failedClaim, loadKeys, verifyToken, type VerifyKey } from './verify.js'

const DENY = { result: 'deny', reason: 'not_authorized' } as const

function authenticator (ctx: PluginContext<JwtConfig>, keys: VerifyKey[], acls: AclTable) {
  const expected = expectedClaims(ctx.config)
  const fromUsername = ctx.config['auth.jwt.from'] === 'username'
  const requireExp = requiresExp(ctx.config)
  return async ({ client, password }: AuthenticateRequest): Promise<AuthenticateAnswer> => {
    const token = fromUsername ? client.username : password?.toString('utf8')
    if (token === undefined || token === '') return 'ignore'
    const verdict = await verifyToken(token, keys, requireExp)
    if (verdict.kind === 'not_jwt') return 'ignore'
    const deny = (why: string): AuthenticateAnswer => {
      ctx.logger.debug({ clientId: client.clientId, why }, 'JWT refused')
      return DENY
    }
    if (verdict.kind === 'invalid') return deny(verdict.why)
    const claim = failedClaim(verdict.claims, expected, client)
    if (claim !== undefined) return deny(`claim ${claim} does not match`)
    let acl: TokenAcl | undefined
    try {
      acl = aclFromClaims(verdict.claims)
    } catch (err) {
      return deny((err as Error).message)
    }
    acls.authenticated(connectionKey(client), acl)
    return verdict.claims.is_superuser === true ? { result: 'allow', superuser: true } : { result: 'allow' }
  }
}

function aclChecker (acls: AclTable): (request: CheckAclRequest) => Decision {
  return ({ client, access, topic }) => {
    const acl = acls.get(connectionKey(client))
    if (acl === undefined) return 'ignore'
    return aclAllows(acl, access, topic) ? 'allow' : 'deny'
  }
}

export default definePlugin<JwtConfig>({
  name: 'broker_auth_jwt',
  version: '0.1.0',
  description: 'Authentication and ACL with JSON Web Tokens (HMAC, RSA, ECDSA)',
  schema,
  // a pubkey file that cannot be read or is no public key is refused before it is saved
  async check (config, root) {
    await loadKeys(config, root)
  },

  async load (ctx) {
    const keys = await loadKeys(ctx.config, ctx.root)
    const secret = ctx.config['auth.jwt.secret']
    if (secret !== undefined && Buffer.byteLength(secret) < 32) {
      ctx.logger.warn('auth.jwt.secret is shorter than 32 bytes; a short HMAC secret can be guessed offline from any token')
    }
    // acl claims of the clients allowed here, by connection; dropped at unload (a handler kept elsewhere finds none)
    const acls = new AclTable()
    ctx.onUnload(() => { acls.clear() })
    ctx.hooks.add('client.authenticate', authenticator(ctx, keys, acls))
    ctx.hooks.add('client.check_acl', aclChecker(acls))
    ctx.hooks.add('client.connected', (client) => { acls.connected(connectionKey(client)) })
    ctx.hooks.add('client.disconnected', (client) => { acls.disconnected(connectionKey(client)) })
  }
})
