// broker_auth_mysql: authentication, superuser and ACL by MySQL/MariaDB
// queries (EMQ X 3.x emqx_auth_mysql). See README.md.
import mysql from 'mysql2/promise'
import { addSqlHooks, backendGuard, definePlugin, serverText, type SqlResult } from '../../lib/plugin-kit/index.js'
import { schema, type AuthMysqlConfig } from './settings.js'

export { schema, type AuthMysqlConfig } from './settings.js'

export default definePlugin<AuthMysqlConfig>({
  name: 'broker_auth_mysql',
  version: '0.1.0',
  description: 'Authentication, superuser and ACL checks by MySQL queries',
  schema,
  async load (ctx) {
    const config = ctx.config
    const server = config['auth.mysql.server']
    const timeout = config['auth.mysql.query_timeout']
    const connections = mysql.createPool({
      host: server.host,
      port: server.port,
      user: config['auth.mysql.username'],
      password: config['auth.mysql.password'],
      database: config['auth.mysql.database'],
      connectionLimit: config['auth.mysql.pool'],
      maxIdle: config['auth.mysql.pool'],
      waitForConnections: true,
      queueLimit: 0,
      connectTimeout: timeout,
      enableKeepAlive: true,
      charset: 'utf8mb4'
    })
    const guard = backendGuard(ctx, `MySQL ${serverText(server)}`, timeout, async () => await connections.end().catch(() => {}))
    // prepared statements (execute) with the placeholders bound as `?` parameters
    const run = async (sql: string, params: Array<string | null>): Promise<SqlResult> => {
      const [rows, fields] = await connections.execute({ sql, timeout, rowsAsArray: true }, params)
      return Array.isArray(rows) ? { rows: rows as unknown[][], columns: (fields ?? []).map((f) => f.name) } : { rows: [], columns: [] }
    }
    const backend = addSqlHooks(ctx, guard, {
      texts: { auth: config['auth.mysql.auth_query'], superuser: config['auth.mysql.super_query'], acl: config['auth.mysql.acl_query'] },
      passwordHash: config['auth.mysql.password_hash'],
      unavailableAuth: config['auth.mysql.unavailable.auth'],
      unavailableAcl: config['auth.mysql.unavailable.acl']
    }, () => '?', run)
    ctx.logger.info({ server: serverText(server), database: config['auth.mysql.database'], acl: backend.aclRules !== undefined }, 'MySQL authentication ready')
  }
})
