// client.check_acl answers from the token's acl claim, and their lifetime
// (authenticate → disconnect, unload).
import t, { type Test } from 'tap'
import { clientInfo, type AclAccess, type ClientInfo } from '../../../lib/plugin-kit/testing.js'
import { AclTable, PENDING_TTL_MS } from '../acl.js'
import { load, now, SECRET, sign, type Loaded } from './helpers.js'

const ACL = { pub: ['t/#', 'up/+/data'], sub: ['s/+', 'news/#'], all: ['both/x'] }
const DENY = { result: 'deny', reason: 'not_authorized' }

async function connect (t: Test, loaded: Loaded, claims: Record<string, unknown>, fields: Partial<ClientInfo> = {}): Promise<(access: AclAccess, topic: string) => Promise<string>> {
  const client = clientInfo({ username: 'alice', ...fields })
  t.same(await loaded.auth(await sign(claims, 'HS256', SECRET), client), { result: 'allow' }, 'authenticated')
  loaded.ctx.handler('client.connected')(client)
  const check = loaded.ctx.handler('client.check_acl')
  return async (access, topic) => await check({ client, access, topic })
}

t.test('a token with an acl claim: a matching topic is allowed, any other denied', async (t) => {
  const loaded = await load(t, { 'auth.jwt.secret': SECRET })
  const check = await connect(t, loaded, { acl: ACL })
  t.equal(await check('publish', 't/a/b'), 'allow')
  t.equal(await check('publish', 't'), 'allow', 't/# covers its parent')
  t.equal(await check('publish', 'up/7/data'), 'allow')
  t.equal(await check('publish', 's/1'), 'deny', 'a sub filter does not grant publish')
  t.equal(await check('publish', 'up/7/other'), 'deny')
  t.equal(await check('subscribe', 's/1'), 'allow')
  t.equal(await check('subscribe', 's/+'), 'allow', 'the same filter')
  t.equal(await check('subscribe', 'news/#'), 'allow')
  t.equal(await check('subscribe', 'news/+/x'), 'allow', 'a narrower filter')
  t.equal(await check('subscribe', 't/a'), 'deny', 'a pub filter does not grant subscribe')
  t.equal(await check('subscribe', 's/1/2'), 'deny')
  t.equal(await check('subscribe', '#'), 'deny')
  t.equal(await check('publish', 'both/x'), 'allow', '"all" grants publish')
  t.equal(await check('subscribe', 'both/x'), 'allow', '"all" grants subscribe')
})

t.test('a rule + does not grant a subscription to # at that level', async (t) => {
  const loaded = await load(t, { 'auth.jwt.secret': SECRET })
  const check = await connect(t, loaded, { acl: { sub: ['s/+', '+', 'a/+/#'] } })
  t.equal(await check('subscribe', 's/#'), 'deny', 's/+ vs s/#')
  t.equal(await check('subscribe', '#'), 'deny', '+ vs #')
  t.equal(await check('subscribe', 'a/#'), 'deny', 'a/# also matches a, which a/+/# does not')
  t.equal(await check('subscribe', 'a/b/#'), 'allow')
})

t.test('an empty acl claim denies everything', async (t) => {
  const check = await connect(t, await load(t, { 'auth.jwt.secret': SECRET }), { acl: {} })
  t.equal(await check('publish', 't'), 'deny')
  t.equal(await check('subscribe', 't'), 'deny')
})

t.test('clients without an acl claim, or not authenticated here, are left to the chain', async (t) => {
  const loaded = await load(t, { 'auth.jwt.secret': SECRET })
  const check = await connect(t, loaded, { sub: 'alice' })
  t.equal(await check('publish', 't/a'), 'ignore')
  t.equal(await loaded.auth('plain-password', { clientId: 'other' }), 'ignore')
  t.equal(await loaded.ctx.handler('client.check_acl')({ client: clientInfo({ clientId: 'other' }), access: 'publish', topic: 't' }), 'ignore')
})

t.test('the rules are dropped when the client disconnects', async (t) => {
  const loaded = await load(t, { 'auth.jwt.secret': SECRET })
  const check = await connect(t, loaded, { acl: ACL })
  t.equal(await check('publish', 'x'), 'deny')
  loaded.ctx.handler('client.disconnected')(clientInfo({ username: 'alice' }), 'normal')
  t.equal(await check('publish', 'x'), 'ignore')
})

t.test('a client id taken over: the old connection leaving keeps the new one\'s rules', async (t) => {
  const loaded = await load(t, { 'auth.jwt.secret': SECRET })
  const oldCheck = await connect(t, loaded, { acl: { pub: ['old/#'] } }, { port: 50001 })
  const newCheck = await connect(t, loaded, { acl: { pub: ['new/#'] } }, { port: 50002 })
  t.equal(await oldCheck('publish', 'old/1'), 'allow', 'the old connection keeps its rules until it leaves')
  loaded.ctx.handler('client.disconnected')(clientInfo({ username: 'alice', port: 50001 }), 'discarded')
  t.equal(await newCheck('publish', 'new/1'), 'allow')
  t.equal(await newCheck('publish', 'old/1'), 'deny')
  t.same(await loaded.auth(await sign({ exp: now() - 60 }, 'HS256'), { port: 50003 }), DENY, 'a refused third connection')
  t.equal(await newCheck('publish', 'new/1'), 'allow', 'leaves the live connection\'s rules alone')
})

t.test('the table: pending until connected, gone at disconnect, stale pending entries dropped', async (t) => {
  let clock = 1_000_000
  const table = new AclTable(() => clock)
  const acl = { publish: ['t'], subscribe: [] }
  table.authenticated('a', acl)
  t.equal(table.get('a'), acl, 'usable before client.connected')
  table.connected('a')
  table.authenticated('b', acl) // closes during CONNECT: no connected, no disconnected
  table.authenticated('c', undefined)
  t.equal(table.size, 2, 'no entry without an acl claim')
  clock += PENDING_TTL_MS
  table.authenticated('d', acl)
  t.equal(table.get('b'), undefined, 'b dropped after PENDING_TTL_MS')
  t.equal(table.get('a'), acl, 'a connected client is never dropped by age')
  table.disconnected('a')
  table.disconnected('d')
  t.equal(table.size, 0)
})

t.test('a malformed acl claim refuses the client instead of granting everything', async (t) => {
  const { auth } = await load(t, { 'auth.jwt.secret': SECRET })
  for (const acl of [['t/#'], 'all', { pub: 't/#' }, { sub: [1] }, { pub: ['a/#/b'] }, { sub: [''] }]) {
    t.same(await auth(await sign({ acl }, 'HS256')), DENY, JSON.stringify(acl))
  }
})

t.test('unload drops every client\'s rules; load again starts empty', async (t) => {
  const loaded = await load(t, { 'auth.jwt.secret': SECRET })
  const check = await connect(t, loaded, { acl: ACL })
  t.equal(await check('publish', 'x'), 'deny')
  await loaded.ctx.unload()
  t.equal(await check('publish', 'x'), 'ignore')
  const again = await load(t, { 'auth.jwt.secret': SECRET })
  t.equal(await again.ctx.handler('client.check_acl')({ client: clientInfo({ username: 'alice' }), access: 'publish', topic: 'x' }), 'ignore')
})
