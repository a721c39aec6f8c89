// slapd down at start, killed mid-run and restarted, and 200 concurrent
// CONNECTs over a pool of 2: the node stays up, CONNECT is refused as
// "server unavailable" (MQTT 5 0x88, 3.x code 3) with the alarm
// broker_auth_ldap_unavailable, and the plugin recovers by itself.
import { join } from 'node:path'
import t from 'tap'
import { freePort, startBroker, type TestBroker } from '../../../test/helpers/broker.js'
import { concurrentConnects, connackCode } from '../../../test/helpers/servers/outcome.js'
import { startSlapd } from '../../../test/helpers/servers/slapd.js'
import { INSTALL_ROOT } from '../../../lib/plugin-kit/testing.js'

const DIR = join(INSTALL_ROOT, 'plugins/broker_auth_ldap')
const SEED = [join(DIR, 'schema.ldif'), join(DIR, 'seed.ldif')]
const ALARM = 'broker_auth_ldap_unavailable'

const alarmed = (broker: TestBroker): boolean => broker.node.observability.alarms.present().some((a) => a.id === ALARM)

async function allowedWithin (port: number, ms: number): Promise<number> {
  const end = Date.now() + ms
  let code = -1
  while (Date.now() < end) {
    code = await connackCode(port, { username: 'alice', password: 'alice-pw' })
    if (code === 0) return code
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return code
}

const settings = (port: number, pool = 8): Record<string, string | number> => ({ 'auth.ldap.servers': '127.0.0.1', 'auth.ldap.port': port, 'auth.ldap.timeout': '3s', 'auth.ldap.pool': pool })

t.test('down at start: 0x88 / 3, alarm, node up; recovers when slapd starts', async (t) => {
  const port = await freePort()
  const broker = await startBroker({ 'mqtt.allow_anonymous': 'false' }, ['tcp'], undefined, { plugins: { broker_auth_ldap: settings(port) } })
  t.teardown(() => broker.stop())
  t.equal(await connackCode(broker.port(), { protocolVersion: 5, username: 'alice', password: 'alice-pw' }), 0x88)
  t.equal(await connackCode(broker.port(), { protocolVersion: 4, username: 'alice', password: 'alice-pw' }), 3)
  t.ok(alarmed(broker), 'alarm raised')
  t.equal((await broker.node.plugins.list()).find((p) => p.name === 'broker_auth_ldap')?.active, true, 'loaded, node up')
  const slapd = await startSlapd({ seed: SEED, port })
  t.teardown(() => slapd.close())
  t.equal(await allowedWithin(broker.port(), 10000), 0, 'allowed once slapd is up')
  t.notOk(alarmed(broker), 'alarm cleared')
})

t.test('killed mid-run (-9) and restarted: refused meanwhile, recovers by itself', async (t) => {
  const slapd = await startSlapd({ seed: SEED })
  t.teardown(() => slapd.close())
  const broker = await startBroker({ 'mqtt.allow_anonymous': 'false' }, ['tcp'], undefined, { plugins: { broker_auth_ldap: settings(slapd.port) } })
  t.teardown(() => broker.stop())
  t.equal(await connackCode(broker.port(), { username: 'alice', password: 'alice-pw' }), 0)
  await slapd.kill()
  t.equal(await connackCode(broker.port(), { protocolVersion: 5, username: 'alice', password: 'alice-pw' }), 0x88, 'server unavailable')
  t.equal(await connackCode(broker.port(), { protocolVersion: 5, username: 'alice', password: 'bad' }), 0x88, 'no deny without an answer')
  t.ok(alarmed(broker), 'alarm raised')
  await slapd.restart()
  t.equal(await allowedWithin(broker.port(), 10000), 0, 'allowed again')
  t.notOk(alarmed(broker), 'alarm cleared')
  t.equal(await connackCode(broker.port(), { username: 'alice', password: 'bad' }), 4, 'deny works again')
})

t.test('200 concurrent CONNECTs over a pool of 2: all answered correctly', async (t) => {
  const slapd = await startSlapd({ seed: SEED })
  t.teardown(() => slapd.close())
  const broker = await startBroker({ 'mqtt.allow_anonymous': 'false' }, ['tcp'], undefined, { plugins: { broker_auth_ldap: settings(slapd.port, 2) } })
  t.teardown(() => broker.stop())
  const kinds = [
    { username: 'alice', password: 'alice-pw', expected: 0 },
    { username: 'ssha', password: 'wrong', expected: 0x86 },
    { username: 'ghost', password: 'x', expected: 0x87 },
    { username: 'sha', password: 'sha-pw', expected: 0 }
  ]
  const { wrong, allowed } = await concurrentConnects(broker.port(), kinds)
  t.strictSame(wrong, [], 'every client got its own answer')
  t.equal(allowed, 100)
})
