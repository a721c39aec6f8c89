// The schema: EMQ X 3.x defaults, the shipped conf file, bad values; the
// handlers the plugin adds (no database needed for these).
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { INSTALL_ROOT, fakeContext, parseConfigText } from '../../../lib/plugin-kit/testing.js'
import plugin, { type AuthPgsqlConfig } from '../index.js'
import { DEFAULTS } from '../settings.js'

const validate = (settings: Record<string, string>): AuthPgsqlConfig => {
  const { value, error } = plugin.schema.validate(settings)
  if (error) throw error
  return value
}

t.test('defaults are EMQ X 3.x emqx_auth_pgsql\'s', async (t) => {
  t.match(validate({}), {
    'auth.pgsql.server': { host: '127.0.0.1', port: 5432 },
    'auth.pgsql.pool': 8,
    'auth.pgsql.database': 'mqtt',
    'auth.pgsql.query_timeout': 5000,
    'auth.pgsql.password_hash': 'sha256',
    'auth.pgsql.auth_query': DEFAULTS['auth.pgsql.auth_query'],
    'auth.pgsql.super_query': DEFAULTS['auth.pgsql.super_query'],
    'auth.pgsql.username': 'root',
    'auth.pgsql.encoding': 'utf8',
    'auth.pgsql.ssl': false,
    'auth.pgsql.unavailable.auth': 'deny',
    'auth.pgsql.unavailable.acl': 'ignore'
  })
  t.equal(validate({})['auth.pgsql.acl_query'], undefined, 'no ACL query unless set')
  t.equal(validate({ 'auth.pgsql.password_hash': 'salt sha256' })['auth.pgsql.auth_query'], DEFAULTS['auth.pgsql.salted_auth_query'], 'a salted hash selects the salt')
  t.equal(validate({ 'auth.pgsql.password_hash': 'pbkdf2,sha256,1000,20' })['auth.pgsql.auth_query'], DEFAULTS['auth.pgsql.salted_auth_query'])
})

t.test('the shipped conf file is valid and says the defaults', async (t) => {
  const lines = parseConfigText(await readFile(join(INSTALL_ROOT, 'etc/plugins/broker_auth_pgsql.conf'), 'utf8'), 'broker_auth_pgsql.conf')
  const settings = Object.fromEntries(lines.map((l) => [l.key, l.value]))
  t.same(validate(settings), { ...validate({}), 'auth.pgsql.acl_query': DEFAULTS['auth.pgsql.acl_query'] }, 'the file sets EMQ X\'s ACL query')
})

t.test('bad values are schema errors', async (t) => {
  for (const [key, value, pattern] of [
    ['auth.pgsql.password_hash', 'sha3', /Invalid password hash spec/],
    ['auth.pgsql.server', 'db:port', /no valid port/],
    ['auth.pgsql.pool', '0', /pool/],
    ['auth.pgsql.unavailable.auth', 'allow', /unavailable\.auth/],
    ['auth.pgsql.nonsense', 'x', /not allowed/]
  ] as const) {
    t.match(plugin.schema.validate({ [key]: value }).error?.message, pattern, `${key} = ${value}`)
  }
})

t.test('an unset acl_query adds no ACL handler (SPEC §5.2)', async (t) => {
  const ctx = fakeContext('broker_auth_pgsql', validate({ 'auth.pgsql.server': '127.0.0.1:1', 'auth.pgsql.query_timeout': '1s' }))
  await plugin.load(ctx)
  t.teardown(async () => await ctx.unload())
  t.ok(ctx.added.get('client.authenticate'))
  t.notOk(ctx.added.get('client.check_acl'))
})

t.test('an empty acl_query adds no ACL handler; an empty super_query no superuser query', async (t) => {
  const ctx = fakeContext('broker_auth_pgsql', validate({ 'auth.pgsql.acl_query': '', 'auth.pgsql.super_query': '', 'auth.pgsql.server': '127.0.0.1:1', 'auth.pgsql.query_timeout': '1s' }))
  await plugin.load(ctx)
  t.teardown(async () => await ctx.unload())
  t.ok(ctx.added.get('client.authenticate'))
  t.notOk(ctx.added.get('client.check_acl'))
})
