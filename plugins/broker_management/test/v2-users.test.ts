// /api/v2 administrator users (SPEC §2.17, §5.1): Basic auth by user (not app), CRUD with 105/106/113, POST /auth
// 103/104, change_pwd 114; successful checks are remembered briefly and forgotten on a password change.
import t from 'tap'
import { hashForStorage, memoryStore } from '../../../lib/plugin-kit/testing.js'
import { Users, VERIFIED_TTL_MS } from '../users.js'
import { startV2Node } from './v2-api.js'

const api = await startV2Node({}, { 'dashboard.default_user.login': 'admin', 'dashboard.default_user.password': 'first-secret' })
t.teardown(async () => await api.stop())
const ADMIN = 'admin:first-secret'
const NO_DATA = { status: 200, body: { code: 0, result: [] } }

t.test('v2 takes an administrator user, not an application; v3 the other way round', async (t) => {
  const byUser = await api.call('GET', '/users', { auth: ADMIN })
  t.same([byUser.status, byUser.body], [200, { code: 0, result: [{ username: 'admin', tags: 'administrator' }] }])
  for (const auth of ['admin:public', 'admin:wrong', 'ghost:first-secret', null]) {
    const res = await api.call('GET', '/users', { auth })
    t.equal(res.status, 401, String(auth))
    t.equal(res.headers.get('www-authenticate'), 'Basic realm="broker"')
    t.match(res.body, { code: 103, result: [], message: String })
  }
  t.equal((await fetch(`${api.base.replace('/api/v2', '/api/v3')}/users/`, { headers: { authorization: `Basic ${Buffer.from(ADMIN).toString('base64')}` } })).status, 401)
  t.equal((await fetch(`${api.base.replace('/api/v2', '/api/v3')}/users/`, { headers: { authorization: `Basic ${Buffer.from('admin:public').toString('base64')}` } })).status, 200)
})

t.test('POST /auth needs no Basic auth: 0, 103, 104, 107, 109', async (t) => {
  t.match(await api.call('POST', '/auth', { body: { username: 'admin', password: 'first-secret' }, auth: null }), NO_DATA)
  t.match(await api.call('POST', '/auth', { body: { username: 'admin', password: 'public' }, auth: null }), { status: 400, body: { code: 103, result: [] } })
  t.match(await api.call('POST', '/auth', { body: { username: 'ghost', password: 'x' }, auth: null }), { status: 400, body: { code: 103 } })
  t.match(await api.call('POST', '/auth', { body: { username: '', password: 'x' }, auth: null }), { status: 400, body: { code: 104, result: [] } })
  t.match(await api.call('POST', '/auth', { body: { username: 'admin' }, auth: null }), { status: 400, body: { code: 107, result: [] } })
  t.match(await api.call('POST', '/auth', { raw: '{nope', auth: null }), { status: 400, body: { code: 109, result: [] } })
})

t.test('users: create (113, 104), update (105), delete (106, 105); a new user can use the API', async (t) => {
  t.match(await api.call('POST', '/users', { body: { username: 'ops', password: 'pw1', tags: 'user' }, auth: ADMIN }), NO_DATA)
  t.match(await api.call('POST', '/users', { body: { username: 'ops', password: 'other', tags: 'user' }, auth: ADMIN }), { status: 400, body: { code: 113, result: [] } })
  t.match(await api.call('POST', '/users', { body: { username: 'x', password: '' }, auth: ADMIN }), { status: 400, body: { code: 104 } })
  t.match(await api.call('POST', '/users', { body: { username: 'x', password: 5 }, auth: ADMIN }), { status: 400, body: { code: 108 } })
  t.match(await api.call('GET', '/users', { auth: 'ops:pw1' }), { status: 200, body: { code: 0, result: [{ username: String }, { username: String }] } })

  t.match(await api.call('PUT', '/users/ops', { body: { tags: 'administrator' }, auth: ADMIN }), NO_DATA)
  const users = (await api.call('GET', '/users', { auth: ADMIN })).body as { result: Array<{ username: string, tags: string }> }
  t.same(users.result.find((u) => u.username === 'ops'), { username: 'ops', tags: 'administrator' })
  t.match(await api.call('PUT', '/users/ghost', { body: { tags: 'x' }, auth: ADMIN }), { status: 404, body: { code: 105, result: [] } })

  t.match(await api.call('DELETE', '/users/admin', { auth: ADMIN }), { status: 403, body: { code: 106, result: [] } })
  t.match(await api.call('DELETE', '/users/ops', { auth: ADMIN }), NO_DATA)
  t.match(await api.call('DELETE', '/users/ops', { auth: ADMIN }), { status: 404, body: { code: 105 } })
  t.equal((await api.call('GET', '/users', { auth: 'ops:pw1' })).status, 401, 'a deleted user is refused at once')
})

t.test('PUT /change_pwd/:username: 114, 104, 105; the old password is refused at once', async (t) => {
  t.match(await api.call('PUT', '/change_pwd/admin', { body: { old_pwd: 'wrong', new_pwd: 'second' }, auth: ADMIN }), { status: 400, body: { code: 114, result: [] } })
  t.match(await api.call('PUT', '/change_pwd/ghost', { body: { old_pwd: 'a', new_pwd: 'b' }, auth: ADMIN }), { status: 404, body: { code: 105 } })
  t.match(await api.call('PUT', '/change_pwd/admin', { body: { old_pwd: 'first-secret', new_pwd: '' }, auth: ADMIN }), { status: 400, body: { code: 104 } })
  t.match(await api.call('PUT', '/change_pwd/admin', { body: { old_pwd: 'first-secret', new_pwd: 'second' }, auth: ADMIN }), NO_DATA)
  t.equal((await api.call('GET', '/users', { auth: ADMIN })).status, 401, 'the remembered check of the old password is forgotten')
  t.equal((await api.call('GET', '/users', { auth: 'admin:second' })).status, 200)
  t.match(await api.call('POST', '/auth', { body: { username: 'admin', password: 'second' }, auth: null }), NO_DATA)
})

t.test('Users.verify: a remembered success ends when the stored user changes (here or on another node), never a failure', async (t) => {
  const store = memoryStore()
  let now = 1_000_000
  const users = new Users(store, { login: 'root', password: 'pw' }, () => now)
  await users.seed()
  t.notOk(await users.verify('root', 'other'))
  t.ok(await users.verify('root', 'pw'))
  t.ok(await users.verify('root', 'pw'), 'again (remembered)')
  // the stored hash changed behind the class's back, as another node of a cluster does it
  await store.put('user:root', JSON.stringify({ username: 'root', tags: 'administrator', password: await hashForStorage('new') }))
  t.notOk(await users.verify('root', 'pw'), 'the old password is refused at once')
  t.ok(await users.verify('root', 'new'))
  now += VERIFIED_TTL_MS
  t.ok(await users.verify('root', 'new'), 'after the memory expires: checked against the store again')
  await store.del('user:root')
  t.notOk(await users.verify('root', 'new'), 'a user removed elsewhere is refused at once')
  await users.seed()
  t.ok(await users.verify('root', 'pw'))
  await users.setPassword('root', 'newer')
  t.notOk(await users.verify('root', 'new'), 'forgotten on a password change')
  await store.put('user:root', JSON.stringify({ username: 'root', tags: 'administrator', password: await hashForStorage('new') }))
  t.ok(await users.verify('root', 'new'), 'the failure just before was not remembered')
})
