// client.authenticate answers (SPEC §5.2), keyed by client id: unknown id →
// ignore, right password → allow, wrong or missing → deny; load/unload bookkeeping.
import t, { type Test } from 'tap'
import { clientInfo } from '../../../lib/plugin-kit/testing.js'
import plugin from '../index.js'
import { TWO_CLIENTS, api, context } from './helpers.js'

const DENY = { result: 'deny', reason: 'bad_username_or_password' }

async function loadWith (t: Test, raw: Record<string, string> = TWO_CLIENTS) {
  const ctx = context(raw)
  await plugin.load(ctx)
  t.teardown(ctx.unload)
  const authenticate = ctx.handler('client.authenticate')
  return async (clientId: string, password?: Buffer | string, username?: string) =>
    await authenticate({ client: clientInfo({ clientId, username }), password: typeof password === 'string' ? Buffer.from(password) : password })
}

t.test('configured client ids: right password allows, wrong or missing denies, unknown ignores', async (t) => {
  const auth = await loadWith(t)
  t.same(await auth('dev-1', 'dev-1-pw'), { result: 'allow' })
  t.same(await auth('dev-2', 'dev 2 pw #1'), { result: 'allow' })
  t.same(await auth('dev-2', 'dev 2 pw #1', 'someone'), { result: 'allow' }, 'the user name plays no part')
  t.same(await auth('dev-1', 'dev 2 pw #1'), DENY, "another client's password")
  t.same(await auth('dev-1', 'dev-1-pw!'), DENY)
  t.same(await auth('dev-1'), DENY, 'no password')
  t.same(await auth('dev-1', ''), DENY, 'an empty password')
  t.same(await auth('dev-1', Buffer.from([0xc3, 0x28])), DENY, 'not UTF-8')
  t.same(await auth('DEV-1', 'dev-1-pw'), 'ignore', 'client ids are case-sensitive')
  t.same(await auth('dev-3', 'dev-1-pw'), 'ignore')
  t.same(await auth('', 'dev-1-pw'), 'ignore', 'an empty client id')
})

t.test('a stored client id overrides a configured one of the same name', async (t) => {
  const ctx = context(TWO_CLIENTS)
  await ctx.store.put('dev-1', 'not a hash')
  await plugin.load(ctx)
  t.teardown(ctx.unload)
  const answer = await ctx.handler('client.authenticate')({ client: clientInfo({ clientId: 'dev-1' }), password: Buffer.from('dev-1-pw') })
  t.same(answer, DENY, 'the malformed stored value wins and matches nothing')
})

t.test('load, unload, load: one handler per load, and the API follows the loaded instance', async (t) => {
  const first = context(TWO_CLIENTS)
  t.throws(() => api(first), { message: 'broker_auth_clientid has provided no API (not loaded?)' })
  await plugin.load(first)
  t.same([...first.added.keys()], ['client.authenticate', 'client.enhanced_auth'], 'its password check, and the refusal of SCRAM for a registered client id')
  t.equal(first.added.get('client.authenticate')?.length, 1)
  const other = context()
  await plugin.load(other)
  t.same(await api(other).list(), [], 'a second load has its own table')
  await other.unload()
  t.same(await api(first).list(), ['dev-1', 'dev-2'])
  await first.unload()
  t.throws(() => api(first), { message: 'broker_auth_clientid has provided no API (not loaded?)' }, 'no API once unloaded')

  const second = context({ 'auth.client.1.clientid': 'dev-9', 'auth.client.1.password': 'pw' })
  await plugin.load(second)
  t.teardown(second.unload)
  t.equal(first.added.get('client.authenticate')?.length, 0, 'the old context: its handler released, nothing more added')
  t.equal(second.added.get('client.authenticate')?.length, 1)
  t.same(await api(second).list(), ['dev-9'])
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
