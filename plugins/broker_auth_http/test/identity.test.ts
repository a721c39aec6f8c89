// A real node, a real HTTP auth server that finds users ignoring case, and
// real clients: the `username` of its JSON answer is the name the client is
// known by (acl.conf rules, bans, listings, the user name sent in ACL
// requests) (issue 14 #8).
import { rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import type { BannedEntry } from '../../../lib/plugin-kit/testing.js'
import { startBroker, tempDir } from '../../../test/helpers/broker.js'
import { closeAll, connect } from '../../../test/helpers/mqtt.js'
import { connackCode, granted } from '../../../test/helpers/servers/outcome.js'
import { startAuthServer } from './server.js'

t.test('ALICE let in as alice is alice', async (t) => {
  const http = await startAuthServer()
  t.teardown(() => http.close())
  const aclUsers: string[] = []
  http.answer((seen) => {
    const user = seen.form.username ?? seen.query.username
    if (seen.path === '/mqtt/acl') {
      aclUsers.push(user)
      return { status: 200, body: 'ignore' }
    }
    return user?.trimEnd().toLowerCase() === 'alice' ? { status: 200, body: '{"username":"alice"}' } : { status: 401 }
  })
  const dir = await tempDir()
  const aclFile = join(dir, 'acl.conf')
  await writeFile(aclFile, '{deny, {user, "alice"}, subscribe, ["secret/#"]}.\n{allow, all}.\n')
  const broker = await startBroker({ 'mqtt.allow_anonymous': 'false', 'mqtt.acl_file': aclFile, 'mqtt.cache_acl': 'false' }, ['tcp'], undefined, {
    plugins: { broker_auth_http: { 'auth.http.auth_req': http.url('/mqtt/auth'), 'auth.http.acl_req': http.url('/mqtt/acl'), 'auth.http.request.timeout': '5s' } }
  })
  t.teardown(async () => { await broker.stop(); await rm(dir, { recursive: true, force: true }) })
  const url = `mqtt://127.0.0.1:${broker.port()}`
  const upper = await connect(url, { clientId: 'a1', username: 'ALICE', password: 'x' })
  t.teardown(() => closeAll(upper))
  t.same(await granted(upper, ['secret/x', 'open/x']), [0x80, 1], 'the acl.conf rule for alice applies to ALICE')
  t.same([...new Set(aclUsers)], ['alice'], 'the ACL requests name alice')
  t.equal(broker.node.service.connection('a1')[0]?.username, 'alice', 'listed as alice')
  await broker.node.banned.add({ who: 'alice', as: 'username', reason: 'test', desc: '', by: 'tests', until: Math.floor(Date.now() / 1000) + 600 } satisfies BannedEntry)
  t.equal(await connackCode(broker.port(), { protocolVersion: 5, username: 'alice ', password: 'x' }), 0x8a, 'a ban on alice refuses "alice "')
})
