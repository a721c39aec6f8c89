// Run-time users (broker_ctl users add|update|del|list, the API): kept in the
// plugin's durable store as pbkdf2 hashes, surviving unload and load.
import t from 'tap'
import { clientInfo, memoryStore } from '../../../lib/plugin-kit/testing.js'
import plugin, { CredentialError } from '../index.js'
import { ALICE_BOB, api, context } from './helpers.js'

const DENY = { result: 'deny', reason: 'bad_username_or_password' }

t.test('add, update, delete and list, durably across unload and load', async (t) => {
  const store = memoryStore()
  const first = context(ALICE_BOB, store)
  await plugin.load(first)
  t.teardown(first.unload)
  const auth = async (username: string, password: string) =>
    await first.handler('client.authenticate')({ client: clientInfo({ username }), password: Buffer.from(password) })

  t.same(await auth('carol', 'carol-pw'), 'ignore', 'unknown before it is added')
  await api(first).add('carol', 'carol-pw')
  const stored = await store.get('carol')
  t.ok(stored?.startsWith('pbkdf2$'), 'stored as a pbkdf2 hash')
  t.notMatch(stored, 'carol-pw', 'not the plain password')
  t.same(await auth('carol', 'carol-pw'), { result: 'allow' })
  t.same(await auth('carol', 'wrong'), DENY)
  t.same(await api(first).list(), ['alice', 'bob', 'carol'])

  await api(first).update('carol', 'new-pw')
  t.same(await auth('carol', 'carol-pw'), DENY, 'the old password no longer works')
  t.same(await auth('carol', 'new-pw'), { result: 'allow' })

  await first.unload()
  const second = context(ALICE_BOB, store)
  await plugin.load(second)
  t.teardown(second.unload)
  const again = second.handler('client.authenticate')
  t.same(await again({ client: clientInfo({ username: 'carol' }), password: Buffer.from('new-pw') }), { result: 'allow' }, 'kept across a reload')
  t.same(await api(second).list(), ['alice', 'bob', 'carol'])

  await api(second).delete('carol')
  t.equal(await store.get('carol'), undefined)
  t.same(await again({ client: clientInfo({ username: 'carol' }), password: Buffer.from('new-pw') }), 'ignore', 'unknown once deleted')
  t.same(await api(second).list(), ['alice', 'bob'])
})

t.test('duplicates, missing users and bad input throw clear errors', async (t) => {
  const ctx = context(ALICE_BOB)
  await plugin.load(ctx)
  t.teardown(ctx.unload)
  const { add: addUser, update: updateUser, delete: deleteUser, list: listUsers } = api(ctx)
  await addUser('carol', 'pw')
  await t.rejects(addUser('carol', 'other'), { name: 'CredentialError', code: 'exists', message: 'user "carol" already exists' })
  await t.rejects(addUser('alice', 'other'), { code: 'exists', message: 'user "alice" already exists (configured in etc/plugins/broker_auth_username.conf)' })
  await t.rejects(updateUser('dave', 'pw'), { code: 'missing', message: 'user "dave" does not exist' })
  await t.rejects(deleteUser('dave'), { code: 'missing', message: 'user "dave" does not exist' })
  await t.rejects(deleteUser('alice'), { code: 'configured', message: 'user "alice" is configured in etc/plugins/broker_auth_username.conf; remove it there' })
  await t.rejects(addUser('', 'pw'), { code: 'invalid', message: 'the user must be a non-empty string' })
  await t.rejects(addUser('erin', ''), { code: 'invalid', message: 'the password must be a non-empty string' })
  await t.rejects(updateUser('carol', undefined as unknown as string), { code: 'invalid' }, 'JSON callers are checked too')
  t.same(await listUsers(), ['alice', 'bob', 'carol'], 'the refused calls stored nothing')
  const err = await addUser('bob', 'pw').catch((e: unknown) => e)
  t.type(err, CredentialError, 'an instance of the exported error class')
})

t.test('updating a configured user stores an override; deleting it restores the configured password', async (t) => {
  const store = memoryStore()
  const ctx = context(ALICE_BOB, store)
  await plugin.load(ctx)
  t.teardown(ctx.unload)
  const { update: updateUser, delete: deleteUser, list: listUsers } = api(ctx)
  const auth = async (password: string) =>
    await ctx.handler('client.authenticate')({ client: clientInfo({ username: 'alice' }), password: Buffer.from(password) })
  await updateUser('alice', 'override')
  t.ok((await store.get('alice'))?.startsWith('pbkdf2$'))
  t.same(await auth('override'), { result: 'allow' })
  t.same(await auth('alice-pw'), DENY)
  t.same(await listUsers(), ['alice', 'bob'], 'listed once')
  await deleteUser('alice')
  t.same(await auth('alice-pw'), { result: 'allow' })
  await t.rejects(deleteUser('alice'), { code: 'configured' })
})

t.test('concurrent adds of one user: exactly one wins', async (t) => {
  const ctx = context()
  await plugin.load(ctx)
  t.teardown(ctx.unload)
  const { add: addUser } = api(ctx)
  const results = await Promise.allSettled([addUser('zed', 'a'), addUser('zed', 'b')])
  t.same(results.map((r) => r.status).sort(), ['fulfilled', 'rejected'])
})
