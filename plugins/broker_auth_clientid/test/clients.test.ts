// Run-time client ids (broker_ctl clientid add|update|del|list, the API):
// kept in the plugin's durable store as pbkdf2 hashes, surviving unload and load.
import t from 'tap'
import { clientInfo, memoryStore } from '../../../lib/plugin-kit/testing.js'
import plugin, { CredentialError } from '../index.js'
import { TWO_CLIENTS, api, context } from './helpers.js'

const DENY = { result: 'deny', reason: 'bad_username_or_password' }

t.test('add, update, delete and list, durably across unload and load', async (t) => {
  const store = memoryStore()
  const first = context(TWO_CLIENTS, store)
  await plugin.load(first)
  t.teardown(first.unload)
  const auth = async (clientId: string, password: string) =>
    await first.handler('client.authenticate')({ client: clientInfo({ clientId }), password: Buffer.from(password) })

  t.same(await auth('dev-3', 'dev-3-pw'), 'ignore', 'unknown before it is added')
  await api(first).add('dev-3', 'dev-3-pw')
  const stored = await store.get('dev-3')
  t.ok(stored?.startsWith('pbkdf2$'), 'stored as a pbkdf2 hash')
  t.notMatch(stored, 'dev-3-pw', 'not the plain password')
  t.same(await auth('dev-3', 'dev-3-pw'), { result: 'allow' })
  t.same(await auth('dev-3', 'wrong'), DENY)
  t.same(await api(first).list(), ['dev-1', 'dev-2', 'dev-3'])

  await api(first).update('dev-3', 'new-pw')
  t.same(await auth('dev-3', 'dev-3-pw'), DENY, 'the old password no longer works')
  t.same(await auth('dev-3', 'new-pw'), { result: 'allow' })

  await first.unload()
  const second = context(TWO_CLIENTS, store)
  await plugin.load(second)
  t.teardown(second.unload)
  const again = second.handler('client.authenticate')
  t.same(await again({ client: clientInfo({ clientId: 'dev-3' }), password: Buffer.from('new-pw') }), { result: 'allow' }, 'kept across a reload')
  t.same(await api(second).list(), ['dev-1', 'dev-2', 'dev-3'])

  await api(second).delete('dev-3')
  t.equal(await store.get('dev-3'), undefined)
  t.same(await again({ client: clientInfo({ clientId: 'dev-3' }), password: Buffer.from('new-pw') }), 'ignore', 'unknown once deleted')
  t.same(await api(second).list(), ['dev-1', 'dev-2'])
})

t.test('duplicates, missing client ids and bad input throw clear errors', async (t) => {
  const ctx = context(TWO_CLIENTS)
  await plugin.load(ctx)
  t.teardown(ctx.unload)
  const { add: addClient, update: updateClient, delete: deleteClient, list: listClients } = api(ctx)
  await addClient('dev-3', 'pw')
  await t.rejects(addClient('dev-3', 'other'), { name: 'CredentialError', code: 'exists', message: 'client id "dev-3" already exists' })
  await t.rejects(addClient('dev-1', 'other'), { code: 'exists', message: 'client id "dev-1" already exists (configured in etc/plugins/broker_auth_clientid.conf)' })
  await t.rejects(updateClient('dev-4', 'pw'), { code: 'missing', message: 'client id "dev-4" does not exist' })
  await t.rejects(deleteClient('dev-4'), { code: 'missing', message: 'client id "dev-4" does not exist' })
  await t.rejects(deleteClient('dev-1'), { code: 'configured', message: 'client id "dev-1" is configured in etc/plugins/broker_auth_clientid.conf; remove it there' })
  await t.rejects(addClient('', 'pw'), { code: 'invalid', message: 'the client id must be a non-empty string' })
  await t.rejects(addClient('dev-5', ''), { code: 'invalid', message: 'the password must be a non-empty string' })
  t.same(await listClients(), ['dev-1', 'dev-2', 'dev-3'], 'the refused calls stored nothing')
  const err = await addClient('dev-2', 'pw').catch((e: unknown) => e)
  t.type(err, CredentialError, 'an instance of the exported error class')
})

t.test('updating a configured client id stores an override; deleting it restores the configured password', async (t) => {
  const store = memoryStore()
  const ctx = context(TWO_CLIENTS, store)
  await plugin.load(ctx)
  t.teardown(ctx.unload)
  const { update: updateClient, delete: deleteClient, list: listClients } = api(ctx)
  const auth = async (password: string) =>
    await ctx.handler('client.authenticate')({ client: clientInfo({ clientId: 'dev-1' }), password: Buffer.from(password) })
  await updateClient('dev-1', 'override')
  t.ok((await store.get('dev-1'))?.startsWith('pbkdf2$'))
  t.same(await auth('override'), { result: 'allow' })
  t.same(await auth('dev-1-pw'), DENY)
  t.same(await listClients(), ['dev-1', 'dev-2'], 'listed once')
  await deleteClient('dev-1')
  t.same(await auth('dev-1-pw'), { result: 'allow' })
})

t.test('concurrent adds of one client id: exactly one wins', async (t) => {
  const ctx = context()
  await plugin.load(ctx)
  t.teardown(ctx.unload)
  const { add: addClient } = api(ctx)
  const results = await Promise.allSettled([addClient('dev-z', 'a'), addClient('dev-z', 'b')])
  t.same(results.map((r) => r.status).sort(), ['fulfilled', 'rejected'])
})
