// The schema: EMQ X 3.x defaults, the shipped conf file, bad values; the
// handlers the plugin adds (no database needed for these).
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { INSTALL_ROOT, fakeContext, parseConfigText } from '../../../lib/plugin-kit/testing.js'
import plugin, { type AuthMysqlConfig } from '../index.js'
import { DEFAULTS } from '../settings.js'

const validate = (settings: Record<string, string>): AuthMysqlConfig => {
  const { value, error } = plugin.schema.validate(settings)
  if (error) throw error
  return value
}

t.test('defaults are EMQ X 3.x emqx_auth_mysql\'s', async (t) => {
  t.match(validate({}), {
    'auth.mysql.server': { host: '127.0.0.1', port: 3306 },
    'auth.mysql.pool': 8,
    'auth.mysql.database': 'mqtt',
    'auth.mysql.query_timeout': 5000,
    'auth.mysql.password_hash': 'sha256',
    'auth.mysql.auth_query': DEFAULTS['auth.mysql.auth_query'],
    'auth.mysql.super_query': DEFAULTS['auth.mysql.super_query'],
    'auth.mysql.acl_query': DEFAULTS['auth.mysql.acl_query'],
    'auth.mysql.unavailable.auth': 'deny',
    'auth.mysql.unavailable.acl': 'ignore'
  })
  t.equal(validate({ 'auth.mysql.password_hash': 'salt,sha256' })['auth.mysql.auth_query'], DEFAULTS['auth.mysql.salted_auth_query'], 'a salted hash selects the salt')
  t.equal(validate({ 'auth.mysql.password_hash': 'pbkdf2,sha256,1000,20' })['auth.mysql.auth_query'], DEFAULTS['auth.mysql.salted_auth_query'])
})

t.test('the shipped conf file is valid and says the defaults', async (t) => {
  const lines = parseConfigText(await readFile(join(INSTALL_ROOT, 'etc/plugins/broker_auth_mysql.conf'), 'utf8'), 'broker_auth_mysql.conf')
  const settings = Object.fromEntries(lines.map((l) => [l.key, l.value]))
  t.same(validate(settings), validate({}))
})

t.test('bad values are schema errors', async (t) => {
  for (const [key, value, pattern] of [
    ['auth.mysql.password_hash', 'sha3', /Invalid password hash spec/],
    ['auth.mysql.server', 'db:port', /no valid port/],
    ['auth.mysql.pool', '0', /pool/],
    ['auth.mysql.unavailable.auth', 'allow', /unavailable\.auth/],
    ['auth.mysql.nonsense', 'x', /not allowed/]
  ] as const) {
    t.match(plugin.schema.validate({ [key]: value }).error?.message, pattern, `${key} = ${value}`)
  }
})

t.test('an empty acl_query adds no ACL handler; an empty super_query no superuser query', async (t) => {
  const ctx = fakeContext('broker_auth_mysql', validate({ 'auth.mysql.acl_query': '', 'auth.mysql.super_query': '', 'auth.mysql.server': '127.0.0.1:1', 'auth.mysql.query_timeout': '1s' }))
  await plugin.load(ctx)
  t.teardown(async () => await ctx.unload())
  t.ok(ctx.added.get('client.authenticate'))
  t.notOk(ctx.added.get('client.check_acl'))
})
