// The settings schema and the shipped etc/plugins/broker_auth_clientid.conf.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { INSTALL_ROOT, parseConfigText } from '../../../lib/plugin-kit/testing.js'
import plugin from '../index.js'

const CONF = 'etc/plugins/broker_auth_clientid.conf'

function validate (raw: Record<string, string>): { message?: string, path?: string, value: Record<string, string> } {
  const { error, value } = plugin.schema.validate(raw)
  return { message: error?.message, path: error?.details[0].path.join('/'), value }
}

t.test('each clientid needs its password and each password its clientid; the error names the key', async (t) => {
  t.match(validate({ 'auth.client.1.clientid': 'a' }), { message: '"auth.client.1.password" is required with "auth.client.1.clientid"', path: 'auth.client.1.clientid' })
  t.match(validate({ 'auth.client.7.password': 'p' }), { message: '"auth.client.7.clientid" is required with "auth.client.7.password"', path: 'auth.client.7.password' })
})

t.test('other schema errors name the key', async (t) => {
  t.match(validate({ 'auth.client.1.clientid': '', 'auth.client.1.password': 'p' }), { message: '"auth.client.1.clientid" is not allowed to be empty' })
  t.match(validate({ 'auth.client.1.client_id': 'a' }), { message: '"auth.client.1.client_id" is not allowed' })
  t.match(validate({ 'auth.user.1.username': 'a' }), { message: '"auth.user.1.username" is not allowed' })
  t.match(validate({ 'auth.client.password_hash': 'pbkdf2' }), { message: /^"auth.client.password_hash" must be one of/ })
  t.match(validate({
    'auth.client.1.clientid': 'a', 'auth.client.1.password': 'p', 'auth.client.2.clientid': 'a', 'auth.client.2.password': 'q'
  }), { message: '"auth.client.2.clientid" names the same client id as "auth.client.1.clientid"', path: 'auth.client.2.clientid' })
})

t.test('valid settings pass through unchanged; password_hash defaults to sha256', async (t) => {
  const raw = { 'auth.client.1.clientid': 'a', 'auth.client.1.password': 'p', 'auth.client.password_hash': 'plain' }
  t.same(validate(raw), { message: undefined, path: undefined, value: raw })
  t.same(validate({}).value, { 'auth.client.password_hash': 'sha256' })
})

t.test(`the shipped ${CONF} parses, validates and has no active client id`, async (t) => {
  const text = await readFile(join(INSTALL_ROOT, CONF), 'utf8')
  const lines = parseConfigText(text, CONF)
  t.same(lines, [], 'every line is a comment: no default password is shipped')
  t.equal(validate(Object.fromEntries(lines.map((l) => [l.key, l.value]))).message, undefined)

  const examples = parseConfigText(text.replace(/^#(?=auth\.)/gm, ''), CONF)
  const uncommented = validate(Object.fromEntries(examples.map((l) => [l.key, l.value])))
  t.equal(uncommented.message, undefined, 'the commented examples are valid once uncommented')
  t.equal(uncommented.value['auth.client.2.clientid'], 'dev:ac:de:48:00:11:22')
  t.match(text, /## Value: .*\n## Default: .*/, 'documented EMQ X style')
})
