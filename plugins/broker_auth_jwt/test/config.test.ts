// The settings of broker_auth_jwt through the host's reader and the plugin's
// schema, including the shipped etc/plugins/broker_auth_jwt.conf.
import t from 'tap'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { INSTALL_ROOT, parseConfigText, readPluginConfigLines, validatePluginConfig } from '../../../lib/plugin-kit/testing.js'
import { expectedClaims, schema, type JwtConfig } from '../config.js'

const FILE = 'etc/plugins/broker_auth_jwt.conf'
const read = (text: string): JwtConfig => validatePluginConfig(schema, parseConfigText(text, FILE), FILE)

t.test('the shipped file sets no key, so loading it fails and says what to set', async (t) => {
  const file = join(INSTALL_ROOT, FILE)
  const lines = await readPluginConfigLines(file)
  t.same(lines.map((l) => l.key), ['auth.jwt.from', 'auth.jwt.verify_claims', 'auth.jwt.verify_claims.exp'], 'only the non-secret settings are active (tokens must expire)')
  t.throws(() => validatePluginConfig(schema, lines, file), {
    message: `${file}: set auth.jwt.secret (an HMAC secret) or auth.jwt.pubkey (an RSA/EC public key file): broker_auth_jwt has no key to verify tokens with`
  })
})

t.test('the shipped examples, uncommented, are valid settings', async (t) => {
  const text = (await readFile(join(INSTALL_ROOT, FILE), 'utf8')).replace(/^#(auth\.jwt\.)/gm, '$1')
  const config = read(text)
  t.equal(config['auth.jwt.pubkey'], 'etc/certs/jwt_public_key.pem')
  t.same(expectedClaims({ ...config, 'auth.jwt.verify_claims': true }), [
    ['sub', '%u'], ['client', '%c'], ['iss', 'https://auth.example.com']
  ])
})

t.test('defaults: token from the password, no claim checks', async (t) => {
  const config = read('auth.jwt.secret = s')
  t.same(config, { 'auth.jwt.secret': 's', 'auth.jwt.from': 'password', 'auth.jwt.verify_claims': false, 'auth.jwt.verify_claims.exp': 'optional' })
  t.same(expectedClaims(config), [])
})

t.test('verify_claims takes on | off and lists the claim settings only when on', async (t) => {
  const on = read('auth.jwt.pubkey = k.pem\nauth.jwt.verify_claims = on\nauth.jwt.verify_claims.sub = %u\nauth.jwt.verify_claims.tenant = acme')
  t.same(expectedClaims(on), [['sub', '%u'], ['tenant', 'acme']])
  const off = read('auth.jwt.pubkey = k.pem\nauth.jwt.verify_claims = off\nauth.jwt.verify_claims.sub = %u')
  t.equal(off['auth.jwt.verify_claims'], false)
  t.same(expectedClaims(off), [])
})

t.test('bad values are refused with file:line and key', async (t) => {
  t.throws(() => read('auth.jwt.secret = s\nauth.jwt.from = clientid'), { message: /^etc\/plugins\/broker_auth_jwt\.conf:2: auth\.jwt\.from: "clientid" is not one of password \| username$/ })
  t.throws(() => read('auth.jwt.secret = s\nauth.jwt.verify_claims = maybe'), { message: /:2: auth\.jwt\.verify_claims: \S+ is not a switch/ })
  t.throws(() => read('auth.jwt.secret = s\nauth.jwt.secrte = t'), { message: /:2: auth\.jwt\.secrte: unknown setting$/ })
  t.throws(() => read('auth.jwt.secret = ""'), { message: /:1: auth\.jwt\.secret: is empty/ })
})
