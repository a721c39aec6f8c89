// broker_auth_redis: authentication, superuser and ACL from Redis hashes
// (EMQ X 3.x emqx_auth_redis), one server or the master a Sentinel names.
// See README.md.
import { backendAclChecker, backendAuthenticator, backendGuard, definePlugin, passwordChecker, serverText } from '../../lib/plugin-kit/index.js'
import { RedisConnections } from './connections.js'
import { aclRulesQuery, queriesOf } from './queries.js'
import { schema, type AuthRedisConfig } from './settings.js'

export { schema, type AuthRedisConfig } from './settings.js'

const NAME = 'broker_auth_redis'

function serverName (config: AuthRedisConfig): string {
  const servers = config['auth.redis.server'].map(serverText).join(',')
  return config['auth.redis.type'] === 'sentinel' ? `Redis master ${config['auth.redis.sentinel']} (sentinels ${servers})` : `Redis ${servers}`
}

export default definePlugin<AuthRedisConfig>({
  name: NAME,
  version: '0.1.0',
  description: 'Authentication, superuser and ACL from Redis',
  schema,
  async load (ctx) {
    const config = ctx.config
    const server = serverName(config)
    const timeoutMs = config['auth.redis.query_timeout']
    const connections = new RedisConnections(config, ctx.logger)
    const call = connections.call.bind(connections)
    const guard = backendGuard(ctx, server, timeoutMs, () => connections.close())
    ctx.hooks.add('client.authenticate', backendAuthenticator({
      guard,
      checkPassword: passwordChecker(config['auth.redis.password_hash']),
      queries: queriesOf(call, config['auth.redis.auth_cmd'], config['auth.redis.super_cmd'] ?? undefined),
      unavailable: config['auth.redis.unavailable.auth'],
      logger: ctx.logger
    }))
    const acl = config['auth.redis.acl_cmd']
    if (acl !== null) {
      ctx.hooks.add('client.check_acl', backendAclChecker({
        guard,
        rules: aclRulesQuery(call, acl),
        // the hash lists everything the client may do (EMQ X 3.x: a client with rules and none matching is denied)
        nomatch: 'deny',
        unavailable: config['auth.redis.unavailable.acl'],
        logger: ctx.logger
      }))
    }
    // a server that is down does not stop the plugin loading: its queries fail (and are told once) until it is back
    await connections.settled(timeoutMs)
    ctx.logger.info({ server, pool: config['auth.redis.pool'], acl: acl?.text }, 'Redis authentication ready')
  }
})
