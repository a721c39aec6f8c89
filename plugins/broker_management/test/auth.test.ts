// Applications as credentials (SPEC §5.1) and the apps CRUD rows.
import t, { type Test } from 'tap'
import { startApiNode } from './api.js'

const api = await startApiNode({}, { 'management.default_application.secret': 's3cret' })
t.teardown(async () => await api.stop())
const DEFAULT = 'admin:s3cret'

async function refused (t: Test, auth: string | null): Promise<void> {
  const res = await api.call('GET', '/brokers/', { auth })
  t.equal(res.status, 401)
  t.equal(res.headers.get('www-authenticate'), 'Basic realm="broker"')
  t.match(res.body, { message: String })
}

t.test('401 with the header: no credentials, wrong secret, unknown app, malformed header', async (t) => {
  await refused(t, null)
  await refused(t, 'admin:public')
  await refused(t, 'nobody:s3cret')
  const res = await fetch(`${api.base}/brokers/`, { headers: { authorization: 'Basic !!!' } })
  t.equal(res.status, 401)
  t.equal((await api.call('GET', '/brokers/', { auth: DEFAULT })).status, 200)
})

t.test('apps CRUD; a created app authenticates; disabled or expired → 401', async (t) => {
  const created = await api.call('POST', '/apps/', { auth: DEFAULT, body: { app_id: 'ops', name: 'Ops', desc: 'operators' } })
  t.equal(created.status, 200)
  const { secret } = created.body as { secret: string }
  t.type(secret, 'string')
  t.ok(secret.length >= 16, 'a generated secret')
  t.equal((await api.call('GET', '/brokers/', { auth: `ops:${secret}` })).status, 200)

  const dup = await api.call('POST', '/apps/', { auth: DEFAULT, body: { app_id: 'ops', name: 'again' } })
  t.equal(dup.status, 400)
  t.match(dup.body, { code: 102 })

  const list = (await api.call('GET', '/apps/', { auth: DEFAULT })).body as Array<Record<string, unknown>>
  t.match(list.find((a) => a.app_id === 'ops'), { app_id: 'ops', name: 'Ops', desc: 'operators', status: true, expired: 'undefined' })
  t.notOk(list.some((a) => 'secret' in a), 'the list shows no secrets')
  t.ok(list.some((a) => a.app_id === 'admin'), 'the default app is listed')
  t.same((await api.call('GET', '/apps/ops', { auth: DEFAULT })).body, { app_id: 'ops', name: 'Ops', desc: 'operators', status: true, expired: 'undefined', role: 'administrator' }, 'the secret is shown only at creation')

  t.equal((await api.call('PUT', '/apps/ops', { auth: DEFAULT, body: { status: false } })).body, 'ok')
  await refused(t, `ops:${secret}`)
  t.equal((await api.call('PUT', '/apps/ops', { auth: DEFAULT, body: { status: true, expired: Math.floor(Date.now() / 1000) - 10 } })).body, 'ok')
  await refused(t, `ops:${secret}`)
  t.equal((await api.call('PUT', '/apps/ops', { auth: DEFAULT, body: { expired: Math.floor(Date.now() / 1000) + 3600, name: 'Ops 2' } })).body, 'ok')
  t.equal((await api.call('GET', '/brokers/', { auth: `ops:${secret}` })).status, 200)
  t.match((await api.call('GET', '/apps/ops', { auth: DEFAULT })).body, { name: 'Ops 2' })

  t.equal((await api.call('DELETE', '/apps/ops', { auth: DEFAULT })).body, 'ok')
  await refused(t, `ops:${secret}`)
  t.equal((await api.call('GET', '/apps/ops', { auth: DEFAULT })).status, 404)
  t.equal((await api.call('DELETE', '/apps/ops', { auth: DEFAULT })).status, 404)

  const given = await api.call('POST', '/apps/', { auth: DEFAULT, body: { app_id: 'fixed', name: 'F', secret: 'given-secret' } })
  t.same(given.body, { secret: 'given-secret' })
  t.equal((await api.call('GET', '/brokers/', { auth: 'fixed:given-secret' })).status, 200)
})

t.test('the default application can be disabled, and then refuses', async (t) => {
  t.equal((await api.call('PUT', '/apps/admin', { auth: DEFAULT, body: { status: false } })).body, 'ok')
  await refused(t, DEFAULT)
})
