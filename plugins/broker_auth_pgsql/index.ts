// broker_auth_pgsql: authentication, superuser and ACL by PostgreSQL
// queries (EMQ X 3.x emqx_auth_pgsql). See README.md.
import { readFileSync } from 'node:fs'
import { isAbsolute, join } from 'node:path'
import type { ConnectionOptions } from 'node:tls'
import pg from 'pg'
import { addSqlHooks, backendGuard, definePlugin, serverText, type SqlResult } from '../../lib/plugin-kit/index.js'
import { schema, type AuthPgsqlConfig } from './settings.js'

export { schema, type AuthPgsqlConfig } from './settings.js'

function tlsOptions (config: AuthPgsqlConfig, root: string): ConnectionOptions | false {
  if (!config['auth.pgsql.ssl']) return false
  const read = (key: 'keyfile' | 'certfile' | 'cacertfile'): Buffer | undefined => {
    const path = config[`auth.pgsql.ssl_opts.${key}`]
    return path === undefined ? undefined : readFileSync(isAbsolute(path) ? path : join(root, path))
  }
  const ca = read('cacertfile')
  // without a CA file the server certificate is not verified (EMQ X 3.x's ssl = true did not verify either)
  return { key: read('keyfile'), cert: read('certfile'), ca, rejectUnauthorized: ca !== undefined }
}

export default definePlugin<AuthPgsqlConfig>({
  name: 'broker_auth_pgsql',
  version: '0.1.0',
  description: 'Authentication, superuser and ACL checks by PostgreSQL queries',
  schema,
  async load (ctx) {
    const config = ctx.config
    const server = config['auth.pgsql.server']
    const timeout = config['auth.pgsql.query_timeout']
    const connections = new pg.Pool({
      host: server.host,
      port: server.port,
      user: config['auth.pgsql.username'],
      password: config['auth.pgsql.password'],
      database: config['auth.pgsql.database'],
      client_encoding: config['auth.pgsql.encoding'],
      ssl: tlsOptions(config, ctx.root),
      max: config['auth.pgsql.pool'],
      connectionTimeoutMillis: timeout,
      query_timeout: timeout,
      keepAlive: true
    })
    // an idle client whose server went away: the pool drops it; without a listener it would crash the node
    connections.on('error', (err) => ctx.logger.debug({ err: err.message }, 'idle PostgreSQL connection failed'))
    const guard = backendGuard(ctx, `PostgreSQL ${serverText(server)}`, timeout, async () => await connections.end().catch(() => {}))
    // placeholders bound as $1, $2 … parameters
    const run = async (text: string, params: Array<string | null>): Promise<SqlResult> => {
      const result = await connections.query<unknown[]>({ text, values: params, rowMode: 'array' })
      return { rows: result.rows, columns: result.fields.map((f) => f.name) }
    }
    const backend = addSqlHooks(ctx, guard, {
      texts: { auth: config['auth.pgsql.auth_query'], superuser: config['auth.pgsql.super_query'], acl: config['auth.pgsql.acl_query'] },
      passwordHash: config['auth.pgsql.password_hash'],
      unavailableAuth: config['auth.pgsql.unavailable.auth'],
      unavailableAcl: config['auth.pgsql.unavailable.acl']
    }, (index) => `$${index}`, run)
    ctx.logger.info({ server: serverText(server), database: config['auth.pgsql.database'], acl: backend.aclRules !== undefined }, 'PostgreSQL authentication ready')
  }
})
