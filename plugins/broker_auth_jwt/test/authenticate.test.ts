// client.authenticate answers of broker_auth_jwt: signatures, time claims,
// token source, verify_claims, superuser, and the pubkey setting.
import t from 'tap'
import { generateKeyPairSync } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import pino from 'pino'
import plugin from '../index.js'
import { fakeContext } from '../../../lib/plugin-kit/testing.js'
import { b64url, keyPair, load, now, SECRET, settings, sign, tempDir } from './helpers.js'

const ALLOW = { result: 'allow' }
const DENY = { result: 'deny', reason: 'not_authorized' }

t.test('HS256, HS384 and HS512 tokens signed with the secret are allowed', async (t) => {
  const { auth } = await load(t, { 'auth.jwt.secret': SECRET })
  for (const alg of ['HS256', 'HS384', 'HS512']) {
    t.same(await auth(await sign({ sub: 'alice', exp: now() + 60 }, alg)), ALLOW, alg)
  }
})

t.test('RS256 and PS256 tokens verified with an RSA public key file are allowed', async (t) => {
  const rsa = keyPair('rsa', tempDir(t))
  const { auth } = await load(t, { 'auth.jwt.pubkey': rsa.pemFile })
  t.same(await auth(await sign({ sub: 'alice' }, 'RS256', rsa.privateKey)), ALLOW)
  t.same(await auth(await sign({ sub: 'alice' }, 'PS256', rsa.privateKey)), ALLOW)
})

t.test('ES256 tokens verified with an EC P-256 public key file are allowed', async (t) => {
  const ec = keyPair('ec', tempDir(t))
  const { auth } = await load(t, { 'auth.jwt.pubkey': ec.pemFile })
  t.same(await auth(await sign({ sub: 'alice' }, 'ES256', ec.privateKey)), ALLOW)
})

t.test('a relative pubkey path is resolved against the install root', async (t) => {
  const dir = tempDir(t)
  const ec = keyPair('ec', dir, 'jwt.pem')
  const { auth } = await load(t, { 'auth.jwt.pubkey': 'jwt.pem' }, dir)
  t.same(await auth(await sign({}, 'ES256', ec.privateKey)), ALLOW)
})

t.test('with both secret and pubkey, HMAC tokens use the secret and the others the key', async (t) => {
  const rsa = keyPair('rsa', tempDir(t))
  const { auth } = await load(t, { 'auth.jwt.secret': SECRET, 'auth.jwt.pubkey': rsa.pemFile })
  t.same(await auth(await sign({}, 'HS256')), ALLOW)
  t.same(await auth(await sign({}, 'RS256', rsa.privateKey)), ALLOW)
  t.same(await auth(await sign({}, 'ES256', keyPair('ec', tempDir(t)).privateKey)), DENY, 'no EC key configured')
})

t.test('an expired token is denied; within the 5 s clock tolerance it is not', async (t) => {
  const { auth } = await load(t, { 'auth.jwt.secret': SECRET })
  t.same(await auth(await sign({ exp: now() - 60 }, 'HS256')), DENY)
  t.same(await auth(await sign({ exp: now() - 2 }, 'HS256')), ALLOW)
})

t.test('a token whose nbf or iat is in the future is denied', async (t) => {
  const { auth } = await load(t, { 'auth.jwt.secret': SECRET })
  t.same(await auth(await sign({ nbf: now() + 60 }, 'HS256')), DENY, 'nbf')
  t.same(await auth(await sign({ iat: now() + 60 }, 'HS256')), DENY, 'iat')
  t.same(await auth(await sign({ nbf: now() - 60, iat: now() - 60 }, 'HS256')), ALLOW, 'both in the past')
})

t.test('a tampered token or one signed with another secret is denied', async (t) => {
  const { auth } = await load(t, { 'auth.jwt.secret': SECRET })
  const [header, , signature] = (await sign({ sub: 'alice' }, 'HS256')).split('.')
  t.same(await auth(`${header}.${b64url({ sub: 'mallory' })}.${signature}`), DENY, 'payload changed')
  t.same(await auth(await sign({ sub: 'alice' }, 'HS256', 'another-secret-of-at-least-32-bytes')), DENY, 'wrong secret')
})

t.test('an RSA token signed by another key is denied', async (t) => {
  const dir = tempDir(t)
  const { auth } = await load(t, { 'auth.jwt.pubkey': keyPair('rsa', dir).pemFile })
  t.same(await auth(await sign({}, 'RS256', keyPair('rsa', dir, 'other.pem').privateKey)), DENY)
})

t.test('an unsigned alg none token is denied', async (t) => {
  const { auth } = await load(t, { 'auth.jwt.secret': SECRET })
  for (const alg of ['none', 'None', 'NONE']) {
    t.same(await auth(`${b64url({ alg, typ: 'JWT' })}.${b64url({ sub: 'alice' })}.`), DENY, alg)
  }
})

t.test('an HMAC token made with the public key text as secret is denied (algorithm confusion)', async (t) => {
  const rsa = keyPair('rsa', tempDir(t))
  const { auth } = await load(t, { 'auth.jwt.pubkey': rsa.pemFile })
  const pem = readFileSync(rsa.pemFile, 'utf8')
  t.same(await auth(await sign({ sub: 'alice' }, 'HS256', pem)), DENY)
})

t.test('a password that is not a JWT, or no password, is left to the next plugin', async (t) => {
  const { auth } = await load(t, { 'auth.jwt.secret': SECRET })
  t.equal(await auth(undefined), 'ignore', 'no password')
  t.equal(await auth(''), 'ignore', 'empty password')
  t.equal(await auth('secret-password'), 'ignore', 'plain password')
  t.equal(await auth('a.b.c'), 'ignore', 'three segments, header not JSON')
  t.equal(await auth(`${b64url([1])}.${b64url({})}.x`), 'ignore', 'header JSON but not an object')
  t.equal(await auth(`${b64url({ alg: 'HS256' })}.${b64url({})}`), 'ignore', 'two segments')
  t.equal(await auth(`${b64url({ alg: 'HS256' })}.e30.a+b`), 'ignore', 'not base64url')
  t.same(await auth(`${b64url({ typ: 'JWT' })}.${b64url({})}.x`), DENY, 'a JWT header without alg is a bad JWT, not a password')
})

t.test('auth.jwt.from = username takes the token from the username', async (t) => {
  const { auth } = await load(t, { 'auth.jwt.secret': SECRET, 'auth.jwt.from': 'username' })
  const token = await sign({ sub: 'device' }, 'HS256')
  t.same(await auth(undefined, { username: token }), ALLOW)
  t.equal(await auth(token, { username: 'alice' }), 'ignore', 'the password is not looked at')
  t.equal(await auth(token, { username: undefined }), 'ignore', 'no username')
})

t.test('verify_claims compares claims with %u and %c substituted', async (t) => {
  const { auth } = await load(t, {
    'auth.jwt.secret': SECRET,
    'auth.jwt.verify_claims': 'on',
    'auth.jwt.verify_claims.sub': '%u',
    'auth.jwt.verify_claims.device': 'dev-%c'
  })
  const client = { username: 'alice', clientId: 'c7' }
  t.same(await auth(await sign({ sub: 'alice', device: 'dev-c7' }, 'HS256'), client), ALLOW, 'both match')
  t.same(await auth(await sign({ sub: 'bob', device: 'dev-c7' }, 'HS256'), client), DENY, '%u differs')
  t.same(await auth(await sign({ sub: 'alice', device: 'dev-c8' }, 'HS256'), client), DENY, '%c differs')
  t.same(await auth(await sign({ sub: 'alice' }, 'HS256'), client), DENY, 'claim missing')
  t.same(await auth(await sign({ sub: 'alice', device: 'dev-c7' }, 'HS256'), { username: undefined, clientId: 'c7' }), DENY, 'no username for %u')
  t.same(await auth(await sign({ sub: '', device: 'dev-c7' }, 'HS256'), { username: '', clientId: 'c7' }), DENY, 'an empty username never matches %u')
})

t.test('verify_claims compares strings exactly', async (t) => {
  const { auth } = await load(t, { 'auth.jwt.secret': SECRET, 'auth.jwt.verify_claims': 'on', 'auth.jwt.verify_claims.level': '5' })
  t.same(await auth(await sign({ level: '5' }, 'HS256')), ALLOW)
  t.same(await auth(await sign({ level: 5 }, 'HS256')), DENY, 'a number is not the string')
  t.same(await auth(await sign({ level: '5 ' }, 'HS256')), DENY)
})

t.test('claim settings are not checked while verify_claims is off', async (t) => {
  const { auth } = await load(t, { 'auth.jwt.secret': SECRET, 'auth.jwt.verify_claims.sub': '%u' })
  t.same(await auth(await sign({ sub: 'bob' }, 'HS256')), ALLOW)
})

t.test('a boolean is_superuser: true claim makes a superuser', async (t) => {
  const { auth } = await load(t, { 'auth.jwt.secret': SECRET })
  t.same(await auth(await sign({ is_superuser: true }, 'HS256')), { result: 'allow', superuser: true })
  t.same(await auth(await sign({ is_superuser: 'true' }, 'HS256')), ALLOW, 'a string is not enough')
  t.same(await auth(await sign({ is_superuser: false }, 'HS256')), ALLOW)
})

t.test('a missing pubkey file is a load error naming the setting and the path', async (t) => {
  const dir = tempDir(t)
  const ctx = { ...fakeContext('broker_auth_jwt', settings({ 'auth.jwt.pubkey': 'nope/jwt_public.pem' })), root: dir }
  await t.rejects(async () => { await plugin.load(ctx) }, { message: new RegExp(`^auth\\.jwt\\.pubkey: cannot read ${dir}/nope/jwt_public\\.pem: .*ENOENT`) })
  t.equal(ctx.added.size, 0, 'no hook added')
})

t.test('a pubkey file that is not an RSA or EC public key is a load error', async (t) => {
  const dir = tempDir(t)
  const garbage = join(dir, 'garbage.pem')
  writeFileSync(garbage, 'not a key')
  await t.rejects(load(t, { 'auth.jwt.pubkey': garbage }), { message: `auth.jwt.pubkey: ${garbage} is not a PEM public key` }, 'not PEM')
  const ed = join(dir, 'ed25519.pem')
  writeFileSync(ed, generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }))
  await t.rejects(load(t, { 'auth.jwt.pubkey': ed }), { message: /holds a ed25519 key; an RSA or EC P-256\/P-384\/P-521 public key is expected$/ })
})

t.test('a secret shorter than 32 bytes loads with a warning', async (t) => {
  const lines: string[] = []
  const logger = pino({ level: 'warn' }, new Writable({ write (chunk: Buffer, _enc, done) { lines.push(chunk.toString()); done() } }))
  for (const secret of ['short', SECRET]) {
    const ctx = { ...fakeContext('broker_auth_jwt', settings({ 'auth.jwt.secret': secret })), logger }
    await plugin.load(ctx)
    await ctx.unload()
  }
  t.equal(lines.length, 1, 'only the short secret warns')
  t.match(JSON.parse(lines[0]), { level: 40, msg: /auth\.jwt\.secret is shorter than 32 bytes/ })
})
