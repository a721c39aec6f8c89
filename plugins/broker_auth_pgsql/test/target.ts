// The broker_auth_pgsql target of the shared SQL plugin tests (test/access/backend/sql-suite.ts).
import { fileURLToPath } from 'node:url'
import type { SqlTarget } from '../../../test/access/backend/sql-suite.js'
import { startPostgres } from '../../../test/helpers/servers/postgres.js'
import { DEFAULTS } from '../settings.js'

export const target: SqlTarget = {
  plugin: 'broker_auth_pgsql',
  prefix: 'auth.pgsql',
  start: async () => await startPostgres(),
  schemaFile: fileURLToPath(new URL('../schema.sql', import.meta.url)),
  saltPrefix: 'salt sha256',
  saltSuffix: 'sha256 salt',
  // unset, pgsql has no ACL; the tests use the query the shipped conf file sets
  settings: { 'auth.pgsql.acl_query': DEFAULTS['auth.pgsql.acl_query'] }
}
