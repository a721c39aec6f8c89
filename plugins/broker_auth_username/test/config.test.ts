// The settings schema and the shipped etc/plugins/broker_auth_username.conf.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { INSTALL_ROOT, parseConfigText } from '../../../lib/plugin-kit/testing.js'
import plugin from '../index.js'

const CONF = 'etc/plugins/broker_auth_username.conf'

function validate (raw: Record<string, string>): { message?: string, path?: string, value: Record<string, string> } {
  const { error, value } = plugin.schema.validate(raw)
  return { message: error?.message, path: error?.details[0].path.join('/'), value }
}

t.test('each username needs its password and each password its username; the error names the key', async (t) => {
  t.same(validate({ 'auth.user.1.username': 'a' }),
    { message: '"auth.user.1.password" is required with "auth.user.1.username"', path: 'auth.user.1.username', value: { 'auth.user.1.username': 'a', 'auth.user.password_hash': 'sha256' } })
  t.match(validate({ 'auth.user.3.password': 'p' }), { message: '"auth.user.3.username" is required with "auth.user.3.password"', path: 'auth.user.3.password' })
  t.match(validate({ 'auth.user.1.username': 'a', 'auth.user.2.password': 'p' }), { path: 'auth.user.1.username' }, 'numbers must match')
})

t.test('other schema errors name the key', async (t) => {
  t.match(validate({ 'auth.user.1.username': '', 'auth.user.1.password': 'p' }), { message: '"auth.user.1.username" is not allowed to be empty' })
  t.match(validate({ 'auth.user.1.username': 'a', 'auth.user.1.password': '' }), { message: '"auth.user.1.password" is not allowed to be empty' })
  t.match(validate({ 'auth.user.1.usrname': 'a' }), { message: '"auth.user.1.usrname" is not allowed' })
  t.match(validate({ 'auth.user.x.username': 'a', 'auth.user.x.password': 'p' }), { message: '"auth.user.x.username" is not allowed' })
  t.match(validate({ 'auth.client.1.clientid': 'a' }), { message: '"auth.client.1.clientid" is not allowed' })
  t.match(validate({ 'auth.user.password_hash': 'bcrypt' }), { message: /^"auth.user.password_hash" must be one of \[plain, md5, sha, sha256, sha512\]/ })
  t.match(validate({
    'auth.user.1.username': 'a', 'auth.user.1.password': 'p', 'auth.user.2.username': 'a', 'auth.user.2.password': 'q'
  }), { message: '"auth.user.2.username" names the same user as "auth.user.1.username"', path: 'auth.user.2.username' }, 'the later one is the duplicate')
})

t.test('valid settings pass through unchanged; password_hash defaults to sha256', async (t) => {
  const raw = { 'auth.user.1.username': 'a', 'auth.user.1.password': 'p', 'auth.user.10.username': 'b', 'auth.user.10.password': 'q', 'auth.user.password_hash': 'md5' }
  t.same(validate(raw), { message: undefined, path: undefined, value: raw })
  t.same(validate({}).value, { 'auth.user.password_hash': 'sha256' })
})

t.test(`the shipped ${CONF} parses, validates and has no active user`, async (t) => {
  const text = await readFile(join(INSTALL_ROOT, CONF), 'utf8')
  const lines = parseConfigText(text, CONF)
  t.same(lines, [], 'every line is a comment: no default password is shipped')
  const raw = Object.fromEntries(lines.map((l) => [l.key, l.value]))
  t.same(validate(raw).message, undefined)

  const examples = parseConfigText(text.replace(/^#(?=auth\.)/gm, ''), CONF)
  const uncommented = validate(Object.fromEntries(examples.map((l) => [l.key, l.value])))
  t.equal(uncommented.message, undefined, 'the commented examples are valid once uncommented')
  t.equal(uncommented.value['auth.user.2.password'], 'another secret')
  t.match(text, /## Value: .*\n## Default: .*/, 'documented EMQ X style')
})

