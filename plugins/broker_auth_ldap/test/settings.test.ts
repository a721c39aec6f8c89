// The schema's defaults (EMQ X 3.x), the shipped conf file, bad values, and
// the escaping of DN and filter values.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { INSTALL_ROOT, parseConfigText } from '../../../lib/plugin-kit/testing.js'
import { escapeDnValue, escapeFilterValue } from '../escape.js'
import plugin from '../index.js'

t.test('defaults; the shipped file validates to the same', async (t) => {
  const { value, error } = plugin.schema.validate({})
  t.error(error)
  t.match(value, {
    'auth.ldap.servers': [{ host: '127.0.0.1', port: 389 }],
    'auth.ldap.pool': 8,
    'auth.ldap.bind_dn': 'cn=root,dc=emqx,dc=io',
    'auth.ldap.bind_password': 'public',
    'auth.ldap.timeout': 30000,
    'auth.ldap.scope': 'base',
    'auth.ldap.password_hash': 'plain',
    'auth.ldap.ssl': false,
    'auth.ldap.unavailable.auth': 'deny'
  })
  const lines = parseConfigText(await readFile(join(INSTALL_ROOT, 'etc/plugins/broker_auth_ldap.conf'), 'utf8'), 'broker_auth_ldap.conf')
  const shipped = plugin.schema.validate(Object.fromEntries(lines.map((l) => [l.key, l.value])))
  t.error(shipped.error)
  t.strictSame(shipped.value, value)
  t.strictSame(plugin.schema.validate({ 'auth.ldap.servers': 'a, b:1636', 'auth.ldap.port': '636' }).value?.['auth.ldap.servers'], [{ host: 'a', port: 636 }, { host: 'b', port: 1636 }])
  t.match(plugin.schema.validate({ 'auth.ldap.password_hash': 'bcrypt' }).error?.message, /password_hash/)
  t.match(plugin.schema.validate({ 'auth.ldap.filter': 'cn=%u' }).error?.message, /parentheses/)
})

t.test('RFC 4514 and RFC 4515 escaping', async (t) => {
  t.equal(escapeDnValue('admin,ou=x'), 'admin\\,ou\\=x')
  t.equal(escapeDnValue(' #a+b;c<d>e"f\\ '), '\\ #a\\+b\\;c\\<d\\>e\\"f\\\\\\ ')
  t.equal(escapeDnValue('#a'), '\\#a')
  t.equal(escapeFilterValue('*)(uid=*'), '\\2a\\29\\28uid=\\2a')
  t.equal(escapeFilterValue('a\\b\0'), 'a\\5cb\\00')
})
