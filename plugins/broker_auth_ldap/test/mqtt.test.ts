// The plugin loaded by a real node, a real slapd seeded with schema.ldif and
// seed.ldif, and real MQTT.js clients: allow, deny, ignore, every userPassword
// form, and user names that try to change the DN or the filter. One node at
// a time (the plugin holds one set of connections per process).
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { startBroker } from '../../../test/helpers/broker.js'
import { connackCode } from '../../../test/helpers/servers/outcome.js'
import { startSlapd, type SlapdServer } from '../../../test/helpers/servers/slapd.js'
import { INSTALL_ROOT } from '../../../lib/plugin-kit/testing.js'

const DIR = join(INSTALL_ROOT, 'plugins/broker_auth_ldap')
let slapd: SlapdServer
t.before(async () => { slapd = await startSlapd({ seed: [join(DIR, 'schema.ldif'), join(DIR, 'seed.ldif')] }) })
t.teardown(async () => { await slapd?.close() })

async function node (t: Test, settings: Record<string, string> = {}, anonymous = false) {
  const broker = await startBroker({ 'mqtt.allow_anonymous': String(anonymous) }, ['tcp'], undefined, {
    plugins: { broker_auth_ldap: { 'auth.ldap.servers': '127.0.0.1', 'auth.ldap.port': String(slapd.port), ...settings } }
  })
  t.teardown(() => broker.stop())
  return broker
}

t.test('allow, deny (wrong password), ignore (no entry)', async (t) => {
  const broker = await node(t)
  for (const protocolVersion of [4, 5] as const) {
    const v5 = protocolVersion === 5
    t.equal(await connackCode(broker.port(), { protocolVersion, username: 'alice', password: 'alice-pw' }), 0, `v${protocolVersion} allowed`)
    t.equal(await connackCode(broker.port(), { protocolVersion, username: 'alice', password: 'bad' }), v5 ? 0x86 : 4, 'wrong password: denied')
    t.equal(await connackCode(broker.port(), { protocolVersion, username: 'alice' }), v5 ? 0x86 : 4, 'no password: denied')
    t.equal(await connackCode(broker.port(), { protocolVersion, username: 'nobody', password: 'x' }), v5 ? 0x87 : 5, 'no entry: ignored')
    t.equal(await connackCode(broker.port(), { protocolVersion }), v5 ? 0x87 : 5, 'no username: ignored')
  }
})

t.test('ignore goes on down the chain (anonymous on); deny ends it', async (t) => {
  const broker = await node(t, {}, true)
  t.equal(await connackCode(broker.port(), { username: 'nobody', password: 'x' }), 0)
  t.equal(await connackCode(broker.port(), { username: 'alice', password: 'bad' }), 4)
})

t.test('{SHA} {SSHA} {MD5} {SHA256} values match whatever password_hash says', async (t) => {
  for (const hash of ['plain', 'sha256']) {
    const broker = await node(t, { 'auth.ldap.password_hash': hash })
    for (const user of ['sha', 'ssha', 'md5', 'sha256']) {
      t.equal(await connackCode(broker.port(), { username: user, password: `${user}-pw` }), 0, `${hash}: ${user}`)
      t.equal(await connackCode(broker.port(), { username: user, password: `${user}-px` }), 4, `${hash}: ${user} wrong`)
    }
    await broker.stop()
  }
})

t.test('unprefixed values: password_hash plain | md5 | sha | sha256', async (t) => {
  for (const [hash, user] of [['md5', 'hexmd5'], ['sha', 'hexsha'], ['sha256', 'hexsha256'], ['plain', 'alice']]) {
    const broker = await node(t, { 'auth.ldap.password_hash': hash })
    t.equal(await connackCode(broker.port(), { username: user, password: `${user}-pw` }), 0, `${hash}: right`)
    t.equal(await connackCode(broker.port(), { username: user, password: `${user}-px` }), 4, `${hash}: wrong`)
    if (hash !== 'plain') t.equal(await connackCode(broker.port(), { username: 'alice', password: 'alice-pw' }), 4, `${hash}: a plain value does not pass`)
    await broker.stop()
  }
})

t.test('DN injection: the user name is one escaped RDN value', async (t) => {
  const broker = await node(t)
  // unescaped, these would name cn=alice (or a parent) and allow with alice's password, or be a bad DN
  // (" alice" and "ALICE" do find alice: cn's matching rule ignores case and surrounding spaces)
  for (const username of ['alice,ou=device,dc=emqx,dc=io', 'alice+cn=x', 'alice\\', '#alice', 'x,cn=alice', 'alice"', 'alice;', 'alice,ou=x', '*']) {
    t.equal(await connackCode(broker.port(), { username, password: 'alice-pw' }), 5, `${JSON.stringify(username)}: no such entry, ignored`)
  }
  t.equal(await connackCode(broker.port(), { username: 'alice', password: 'alice-pw' }), 0)
})

t.test('filter injection: a sub-tree search with (cn=%u) gets escaped values', async (t) => {
  const broker = await node(t, { 'auth.ldap.auth_dn': 'ou=device,dc=emqx,dc=io', 'auth.ldap.scope': 'sub', 'auth.ldap.filter': '(&(objectClass=device)(cn=%u))' })
  t.equal(await connackCode(broker.port(), { username: 'alice', password: 'alice-pw' }), 0, 'found by the filter')
  t.equal(await connackCode(broker.port(), { username: 'alice', password: 'bad' }), 4)
  for (const username of ['*', 'ali*', '*)(cn=*', 'alice)(cn=*', '*)(|(cn=*', 'alice)(objectClass=*']) {
    t.equal(await connackCode(broker.port(), { username, password: 'alice-pw' }), 5, `${JSON.stringify(username)}: matches no entry, ignored`)
  }
  t.match(await slapd.search('(cn=alice)', 'cn'), /cn: alice/, 'the directory is unchanged')
})
