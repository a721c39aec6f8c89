// client.authenticate answers (SPEC §5.2): unknown user → ignore, right
// password → allow, wrong or missing → deny; and load/unload bookkeeping.
import t, { type Test } from 'tap'
import { clientInfo } from '../../../lib/plugin-kit/testing.js'
import plugin from '../index.js'
import { ALICE_BOB, api, context } from './helpers.js'

const DENY = { result: 'deny', reason: 'bad_username_or_password' }

async function loadWith (t: Test, raw: Record<string, string> = ALICE_BOB) {
  const ctx = context(raw)
  await plugin.load(ctx)
  t.teardown(ctx.unload)
  const authenticate = ctx.handler('client.authenticate')
  return async (username: string | undefined, password?: Buffer | string) =>
    await authenticate({ client: clientInfo({ username }), password: typeof password === 'string' ? Buffer.from(password) : password })
}

t.test('configured users: right password allows, wrong or missing denies, unknown ignores', async (t) => {
  const auth = await loadWith(t)
  t.same(await auth('alice', 'alice-pw'), { result: 'allow' })
  t.same(await auth('bob', 'bob pw #1'), { result: 'allow' })
  t.same(await auth('alice', 'bob pw #1'), DENY, "another user's password")
  t.same(await auth('alice', 'alice-pw '), DENY, 'a longer password')
  t.same(await auth('alice', 'alice-p'), DENY, 'a prefix of the password')
  t.same(await auth('alice'), DENY, 'no password')
  t.same(await auth('alice', ''), DENY, 'an empty password')
  t.same(await auth('Alice', 'alice-pw'), 'ignore', 'user names are case-sensitive')
  t.same(await auth('carol', 'alice-pw'), 'ignore')
  t.same(await auth(undefined, 'alice-pw'), 'ignore', 'no user name')
  t.same(await auth('', 'alice-pw'), 'ignore', 'an empty user name')
})

t.test('a password that is not UTF-8 is denied, not mangled into a match', async (t) => {
  const auth = await loadWith(t, { 'auth.user.1.username': 'u', 'auth.user.1.password': '\uFFFD' })
  t.same(await auth('u', '\uFFFD'), { result: 'allow' })
  t.same(await auth('u', Buffer.from([0xff])), DENY)
})

t.test('a stored user overrides a configured one of the same name', async (t) => {
  const ctx = context(ALICE_BOB)
  await ctx.store.put('alice', 'not a hash')
  await plugin.load(ctx)
  t.teardown(ctx.unload)
  const authenticate = ctx.handler('client.authenticate')
  t.same(await authenticate({ client: clientInfo({ username: 'alice' }), password: Buffer.from('alice-pw') }), DENY,
    'the malformed stored value wins over the configured password and matches nothing')
  t.same(await authenticate({ client: clientInfo({ username: 'bob' }), password: Buffer.from('bob pw #1') }), { result: 'allow' })
})

t.test('the client id plays no part', async (t) => {
  const ctx = context(ALICE_BOB)
  await plugin.load(ctx)
  t.teardown(ctx.unload)
  const answer = await ctx.handler('client.authenticate')({ client: clientInfo({ clientId: 'alice' }), password: Buffer.from('alice-pw') })
  t.equal(answer, 'ignore')
})

t.test('load, unload, load: one handler per load, and the API follows the loaded instance', async (t) => {
  const first = context(ALICE_BOB)
  t.throws(() => api(first), { message: 'broker_auth_username has provided no API (not loaded?)' })
  await plugin.load(first)
  t.same([...first.added.keys()], ['client.authenticate', 'client.enhanced_auth'], 'password and SCRAM authentication')
  t.equal(first.added.get('client.authenticate')?.length, 1)
  const other = context()
  await plugin.load(other)
  t.same(await api(other).list(), [], 'a second load has its own table')
  await other.unload()
  t.same(await api(first).list(), ['alice', 'bob'])
  await first.unload()
  t.throws(() => api(first), { message: 'broker_auth_username has provided no API (not loaded?)' }, 'no API once unloaded')

  const second = context({ 'auth.user.1.username': 'dave', 'auth.user.1.password': 'pw' })
  await plugin.load(second)
  t.teardown(second.unload)
  t.equal(first.added.get('client.authenticate')?.length, 0, 'the old context: its handler released, nothing more added')
  t.equal(second.added.get('client.authenticate')?.length, 1)
  t.same(await api(second).list(), ['dave'])
})

t.test('two loads at once: each has its own handler', async (t) => {
  const a = context()
  const b = context()
  const results = await Promise.allSettled([plugin.load(a), plugin.load(b)])
  t.teardown(a.unload)
  t.teardown(b.unload)
  t.same(results.map((r) => r.status), ['fulfilled', 'fulfilled'])
  t.equal(a.added.get('client.authenticate')?.length, 1)
  t.equal(b.added.get('client.authenticate')?.length, 1)
})
