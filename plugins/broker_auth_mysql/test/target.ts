// The broker_auth_mysql target of the shared SQL plugin tests (test/access/backend/sql-suite.ts).
import { fileURLToPath } from 'node:url'
import type { SqlTarget } from '../../../test/access/backend/sql-suite.js'
import { startMariadb } from '../../../test/helpers/servers/mariadb.js'

export const target: SqlTarget = {
  plugin: 'broker_auth_mysql',
  prefix: 'auth.mysql',
  start: async () => await startMariadb(),
  schemaFile: fileURLToPath(new URL('../schema.sql', import.meta.url)),
  saltPrefix: 'salt,sha256',
  saltSuffix: 'sha256,salt'
}
