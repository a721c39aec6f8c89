// broker_auth_mysql: authentication, superuser and ACL by MySQL/MariaDB
// queries (EMQ X 3.x emqx_auth_mysql). See README.md.
import mysql from 'mysql2/promise'
import { BackendGuard } from '../../lib/access/backend/guard.js'
import { backendAclChecker, backendAuthenticator } from '../../lib/access/backend/handlers.js'
import { passwordChecker } from '../../lib/access/backend/password.js'
import { serverText } from '../../lib/access/backend/settings.js'
import { sqlBackend } from '../../lib/access/backend/sql.js'
import { definePlugin } from '../../lib/plugins/contract.js'
import { schema, type AuthMysqlConfig } from './settings.js'

export { schema, type AuthMysqlConfig } from './settings.js'

let pool: mysql.Pool | undefined
let guard: BackendGuard | undefined

async function release (): Promise<void> {
  guard?.close()
  guard = undefined
  const old = pool
  pool = undefined
  await old?.end().catch(() => {})
}

export default definePlugin<AuthMysqlConfig>({
  name: 'broker_auth_mysql',
  version: '0.1.0',
  description: 'Authentication, superuser and ACL checks by MySQL queries',
  schema,
  async load (ctx) {
    await release()
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
    pool = connections
    guard = new BackendGuard({ plugin: ctx.name, server: `MySQL ${serverText(server)}`, timeoutMs: timeout, alarms: ctx.alarms, logger: ctx.logger })
    // prepared statements (execute) with the placeholders bound as `?` parameters
    const run = async (sql: string, params: Array<string | null>): Promise<unknown[][]> => {
      const [rows] = await connections.execute({ sql, timeout, rowsAsArray: true }, params)
      return Array.isArray(rows) ? rows as unknown[][] : []
    }
    const backend = sqlBackend({
      auth: config['auth.mysql.auth_query'],
      superuser: config['auth.mysql.super_query'],
      acl: config['auth.mysql.acl_query']
    }, () => '?', run)
    ctx.hooks.add('client.authenticate', backendAuthenticator({
      guard,
      checkPassword: passwordChecker(config['auth.mysql.password_hash']),
      queries: backend.queries,
      unavailable: config['auth.mysql.unavailable.auth'],
      logger: ctx.logger
    }))
    if (backend.aclRules !== undefined) {
      ctx.hooks.add('client.check_acl', backendAclChecker({ guard, rules: backend.aclRules, unavailable: config['auth.mysql.unavailable.acl'], logger: ctx.logger }))
    }
    // tells an outage at load (log and alarm) instead of at the first CONNECT
    void guard.run(async () => await connections.query('select 1'))
    ctx.logger.info({ server: serverText(server), database: config['auth.mysql.database'], acl: backend.aclRules !== undefined }, 'MySQL authentication ready')
  },
  async unload () {
    await release()
  }
})
