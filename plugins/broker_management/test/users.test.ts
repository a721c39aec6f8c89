// Administrator users (SPEC §2.17, §5.1): the default user, CRUD, POST /auth without application credentials, passwords hashed.
import t from 'tap'
import type { PluginStore } from '../../../lib/plugin-kit/admin.js'
import { memoryStore } from '../../../lib/plugin-kit/testing.js'
import { Users } from '../users.js'
import { startApiNode } from './api.js'

const api = await startApiNode({}, { 'dashboard.default_user.login': 'admin', 'dashboard.default_user.password': 'first-secret' })
t.teardown(async () => await api.stop())

t.test('the default user from the settings; POST /auth needs no application credentials', async (t) => {
  t.same((await api.call('GET', '/users/')).body, [{ username: 'admin', tags: 'administrator' }])
  const ok = await api.call('POST', '/auth', { body: { username: 'admin', password: 'first-secret' }, auth: null })
  t.equal(ok.status, 200)
  t.equal(ok.body, 'ok')
  t.match(await api.call('POST', '/auth', { body: { username: 'admin', password: 'public' }, auth: null }), { status: 400, body: { code: 103 } })
  t.match(await api.call('POST', '/auth', { body: { username: 'ghost', password: 'x' }, auth: null }), { status: 400, body: { code: 103 } })
  t.match(await api.call('POST', '/auth', { body: { username: '', password: 'x' }, auth: null }), { status: 400, body: { code: 104 } })
  t.match(await api.call('POST', '/auth', { body: { username: 'admin' }, auth: null }), { status: 400, body: { code: 107 } })
  t.match(await api.call('POST', '/auth', { raw: '{nope', auth: null }), { status: 400, body: { code: 109 } })
  // other operations still need an application
  t.equal((await api.call('GET', '/users/', { auth: null })).status, 401)
})

t.test('passwords are stored salted and hashed, never plain; the seed keeps a changed password', async (t) => {
  const map = new Map<string, string>()
  const store: PluginStore = memoryStore(map)
  const users = new Users(store, { login: 'root', password: 'same' })
  await users.seed()
  await users.add('other', 'same', '')
  const stored = [...map.values()].map((v) => JSON.parse(v) as { password: string })
  t.same([...map.keys()].sort(), ['user:other', 'user:root'])
  for (const user of stored) {
    t.notMatch(user.password, 'same')
    t.match(user.password, /^pbkdf2\$sha256\$\d+\$[0-9a-f]+\$[0-9a-f]+$/)
  }
  t.not(stored[0].password, stored[1].password, 'salted: equal passwords hash differently')
  t.ok(await users.verify('root', 'same'))
  await users.setPassword('root', 'changed')
  await users.seed()
  t.ok(await users.verify('root', 'changed'), 'seeding again does not reset the password')
  t.notOk(await users.verify('root', 'same'))
})

t.test('create, update, delete; the codes of the refusals', async (t) => {
  t.equal((await api.call('POST', '/users/', { body: { username: 'ops', password: 'pw1', tags: 'user' } })).body, 'ok')
  t.match(await api.call('POST', '/users/', { body: { username: 'ops', password: 'other', tags: 'user' } }), { status: 400, body: { code: 113 } })
  t.match(await api.call('POST', '/users/', { body: { username: 'x', password: '' } }), { status: 400, body: { code: 104 } })
  const listed = (await api.call('GET', '/users/')).body as Array<{ username: string }>
  t.same(listed.map((u) => u.username).sort(), ['admin', 'ops'])
  t.equal((await api.call('POST', '/auth', { body: { username: 'ops', password: 'pw1' }, auth: null })).body, 'ok')

  t.equal((await api.call('PUT', '/users/ops', { body: { tags: 'administrator' } })).body, 'ok')
  t.same(((await api.call('GET', '/users/')).body as Array<{ username: string }>).find((u) => u.username === 'ops'), { username: 'ops', tags: 'administrator' })
  t.match(await api.call('PUT', '/users/ghost', { body: { tags: 'x' } }), { status: 404, body: { code: 105 } })

  t.match(await api.call('DELETE', '/users/admin'), { status: 403, body: { code: 106 } })
  t.equal((await api.call('DELETE', '/users/ops')).body, 'ok')
  t.match(await api.call('DELETE', '/users/ops'), { status: 404, body: { code: 105 } })
  t.match(await api.call('POST', '/auth', { body: { username: 'ops', password: 'pw1' }, auth: null }), { status: 400, body: { code: 103 } })
})

t.test('PUT /change_pwd/:username', async (t) => {
  t.match(await api.call('PUT', '/change_pwd/admin', { body: { old_pwd: 'wrong', new_pwd: 'second' } }), { status: 400, body: { code: 114 } })
  t.equal((await api.call('POST', '/auth', { body: { username: 'admin', password: 'first-secret' }, auth: null })).body, 'ok', 'unchanged after a refusal')
  t.match(await api.call('PUT', '/change_pwd/ghost', { body: { old_pwd: 'a', new_pwd: 'b' } }), { status: 404, body: { code: 105 } })
  t.match(await api.call('PUT', '/change_pwd/admin', { body: { old_pwd: 'first-secret', new_pwd: '' } }), { status: 400, body: { code: 104 } })
  t.equal((await api.call('PUT', '/change_pwd/admin', { body: { old_pwd: 'first-secret', new_pwd: 'second' } })).body, 'ok')
  t.match(await api.call('POST', '/auth', { body: { username: 'admin', password: 'first-secret' }, auth: null }), { status: 400, body: { code: 103 } })
  t.equal((await api.call('POST', '/auth', { body: { username: 'admin', password: 'second' }, auth: null })).body, 'ok')
})
