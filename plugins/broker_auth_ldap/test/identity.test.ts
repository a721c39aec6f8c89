// broker_auth_ldap with a real slapd and real clients: LDAP compares names
// ignoring case and extra spaces, so `ALICE` and `alice ` get in with alice's
// password; they are then alice (the entry's own RDN value) for acl.conf
// rules, bans and listings (issue 14 #8). One node at a time.
import { rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { INSTALL_ROOT, type BannedEntry } from '../../../lib/plugin-kit/testing.js'
import { startBroker, tempDir } from '../../../test/helpers/broker.js'
import { closeAll, connect } from '../../../test/helpers/mqtt.js'
import { connackCode, granted } from '../../../test/helpers/servers/outcome.js'
import { startSlapd, type SlapdServer } from '../../../test/helpers/servers/slapd.js'

const DIR = join(INSTALL_ROOT, 'plugins/broker_auth_ldap')
let slapd: SlapdServer
t.before(async () => { slapd = await startSlapd({ seed: [join(DIR, 'schema.ldif'), join(DIR, 'seed.ldif')] }) })
t.teardown(async () => { await slapd?.close() })

const ban = (who: string): BannedEntry => ({ who, as: 'username', reason: 'test', desc: '', by: 'tests', until: Math.floor(Date.now() / 1000) + 600 })

async function node (t: Test, settings: Record<string, string> = {}) {
  const dir = await tempDir()
  const aclFile = join(dir, 'acl.conf')
  await writeFile(aclFile, '{deny, {user, "alice"}, subscribe, ["secret/#"]}.\n{allow, all}.\n')
  const broker = await startBroker({ 'mqtt.allow_anonymous': 'false', 'mqtt.acl_file': aclFile }, ['tcp'], undefined, {
    plugins: { broker_auth_ldap: { 'auth.ldap.servers': '127.0.0.1', 'auth.ldap.port': String(slapd.port), ...settings } }
  })
  t.teardown(async () => { await broker.stop(); await rm(dir, { recursive: true, force: true }) })
  return broker
}

const LAYOUTS: Array<[string, Record<string, string>]> = [
  ['auth_dn cn=%u,… (the default)', {}],
  ['a search for (cn=%u)', { 'auth.ldap.auth_dn': 'ou=device,dc=emqx,dc=io', 'auth.ldap.scope': 'one', 'auth.ldap.filter': '(cn=%u)' }]
]

for (const [layout, settings] of LAYOUTS) {
  t.test(`${layout}: ALICE and "alice " are alice for rules, bans and listings`, async (t) => {
    const broker = await node(t, settings)
    const url = `mqtt://127.0.0.1:${broker.port()}`
    const upper = await connect(url, { clientId: 'a1', username: 'ALICE', password: 'alice-pw' })
    const padded = await connect(url, { clientId: 'a2', username: 'alice ', password: 'alice-pw' })
    const alice = await connect(url, { clientId: 'a3', username: 'alice', password: 'alice-pw' })
    t.teardown(() => closeAll(upper, padded, alice))
    t.same(await granted(upper, ['secret/x', 'open/x']), [0x80, 1], 'the acl.conf rule for alice applies to ALICE')
    t.same(await granted(padded, ['secret/x']), [0x80], 'and to "alice "')
    t.same(await granted(alice, ['secret/x', 'open/x']), [0x80, 1], 'and to alice, as before')
    t.equal(broker.node.service.connection('a1')[0]?.username, 'alice', 'ALICE is listed as alice')
    await broker.node.banned.add(ban('alice'))
    t.equal(await connackCode(broker.port(), { protocolVersion: 5, username: 'Alice', password: 'alice-pw' }), 0x8a, 'a ban on alice refuses Alice')
    t.equal(await connackCode(broker.port(), { protocolVersion: 5, username: 'admin', password: 'admin-pw' }), 0, 'admin still connects')
  })
}
