// An empty user name makes no valid entry DN (`uid=,ou=…`): it is a user not
// found (left to the chain, then mqtt.allow_anonymous), not an LDAP outage
// with its alarm.
import { join } from 'node:path'
import t from 'tap'
import { startBroker, type TestBroker } from '../../../test/helpers/broker.js'
import { connackCode } from '../../../test/helpers/servers/outcome.js'
import { startSlapd } from '../../../test/helpers/servers/slapd.js'
import { INSTALL_ROOT } from '../../../lib/plugin-kit/testing.js'

const DIR = join(INSTALL_ROOT, 'plugins/broker_auth_ldap')
const ALARM = 'broker_auth_ldap_unavailable'
const alarmed = (broker: TestBroker): boolean => broker.node.observability.alarms.present().some((a) => a.id === ALARM)

t.test('an empty user name is not found: not authorized (anonymous off), no alarm, others still served', async (t) => {
  const slapd = await startSlapd({ seed: [join(DIR, 'schema.ldif'), join(DIR, 'seed.ldif')] })
  t.teardown(() => slapd.close())
  const broker = await startBroker({ 'mqtt.allow_anonymous': 'false' }, ['tcp'], undefined, {
    plugins: { broker_auth_ldap: { 'auth.ldap.servers': '127.0.0.1', 'auth.ldap.port': slapd.port, 'auth.ldap.timeout': '3s' } }
  })
  t.teardown(() => broker.stop())
  t.equal(await connackCode(broker.port(), { protocolVersion: 5, username: '', password: 'x' }), 0x87, 'MQTT 5: not authorized (was 0x88 server unavailable)')
  t.equal(await connackCode(broker.port(), { protocolVersion: 4, username: '', password: 'x' }), 5, '3.1.1: not authorized (was 3)')
  t.notOk(alarmed(broker), 'no outage alarm')
  t.equal(await connackCode(broker.port(), { username: 'alice', password: 'alice-pw' }), 0, 'the directory still answers')
})
