// The tests every SQL auth plugin (broker_auth_mysql, broker_auth_pgsql) must
// pass, against a real database server and a real node with MQTT.js clients.
// Each plugin's test files call these with their target. Not a test file
// itself (no `.test.ts`).
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import mqtt from 'mqtt'
import { clientState } from '../../../lib/access/client-state.js'
import { hashPassword, parseHashSpec } from '../../../lib/plugin-kit/hash/password-hash.js'
import { engineClient } from '../../../lib/engine/internals.js'
import { startBroker, type TestBroker } from '../../helpers/broker.js'
import { closeAll, connect, nextMessages, type MqttClient } from '../../helpers/mqtt.js'
import type { SqlServer } from '../../helpers/servers/postgres.js'

export interface SqlTarget {
  plugin: 'broker_auth_mysql' | 'broker_auth_pgsql'
  prefix: 'auth.mysql' | 'auth.pgsql'
  start: () => Promise<SqlServer>
  schemaFile: string
  /** the salt-position forms this plugin's users write (MySQL `salt,sha256`, PgSQL `salt sha256`) */
  saltPrefix: string
  saltSuffix: string
  /** settings every test node gets (e.g. the pgsql ACL query, which has no default) */
  settings?: Record<string, string>
}

/** Starts the database (with the plugin's schema) for the test; closes it after. */
export async function database (t: Test, target: SqlTarget): Promise<SqlServer> {
  const server = await target.start()
  t.teardown(async () => { await server.close() })
  await server.seed(target.schemaFile)
  return server
}

export function pluginSettings (target: SqlTarget, server: SqlServer, extra: Record<string, string | number> = {}): Record<string, string | number> {
  const p = target.prefix
  return {
    [`${p}.server`]: `127.0.0.1:${server.port}`,
    [`${p}.username`]: server.user,
    [`${p}.password`]: server.password,
    [`${p}.database`]: server.database,
    ...target.settings,
    ...extra
  }
}

/** A node with the plugin first (and any `more` plugins after it); no acl.conf rules, acl_nomatch allow. */
export async function brokerWith (t: Test, target: SqlTarget, server: SqlServer, extra: Record<string, string | number> = {}, settings: Record<string, string> = {},
  more: Record<string, Record<string, string | number>> = {}): Promise<TestBroker> {
  const dir = await mkdtemp(join(tmpdir(), 'sql-acl-'))
  const aclFile = join(dir, 'acl.conf')
  await writeFile(aclFile, '')
  const broker = await startBroker({ 'mqtt.allow_anonymous': 'false', 'mqtt.acl_file': aclFile, 'mqtt.acl_nomatch': 'allow', ...settings }, ['tcp'], undefined, {
    plugins: { [target.plugin]: pluginSettings(target, server, extra), ...more }
  })
  t.teardown(async () => {
    await broker.stop()
    await rm(dir, { recursive: true, force: true })
  })
  return broker
}

let counter = 0

/** The CONNACK code a real MQTT.js client gets: 0 accepted, else the return code (v4) or reason code (v5). */
export async function connack (broker: TestBroker, username: string | undefined, password: string | undefined, version: 4 | 5 = 4, clientId = `c${++counter}`): Promise<number> {
  const client = mqtt.connect(`mqtt://127.0.0.1:${broker.port()}`, {
    clientId, username, password, protocolVersion: version, reconnectPeriod: 0, connectTimeout: 20000
  })
  try {
    return await new Promise<number>((resolve, reject) => {
      client.once('connect', () => resolve(0))
      client.once('error', (err: Error & { code?: number }) => typeof err.code === 'number' ? resolve(err.code) : reject(err))
      client.once('close', () => reject(new Error('closed before CONNACK')))
    })
  } finally {
    await client.endAsync(true)
  }
}

export async function client (broker: TestBroker, username: string, clientId: string, password = 'pw'): Promise<MqttClient> {
  return await connect(`mqtt://127.0.0.1:${broker.port()}`, { clientId, username, password, protocolVersion: 5 })
}

/** SUBACK codes for each filter (v5: 0x87 when refused). */
export async function granted (c: MqttClient, ...topics: string[]): Promise<number[]> {
  const out: number[] = []
  for (const topic of topics) {
    try {
      const [g] = await c.subscribeAsync(topic, { qos: 1 })
      out.push(g.qos)
    } catch (err) {
      // MQTT.js rejects a SUBACK whose code is a refusal; the packet says which
      const packet = (err as { packet?: { granted?: Array<number | { reasonCode?: number }> } }).packet
      const code = packet?.granted?.[0]
      if (code === undefined) throw err
      out.push(typeof code === 'number' ? code : code.reasonCode ?? -1)
    }
  }
  return out
}

/** 0 when a QoS 1 publish is accepted, else the PUBACK reason code (0x87 when the ACL refuses it). */
export async function published (c: MqttClient, topic: string): Promise<number> {
  try {
    await c.publishAsync(topic, 'x', { qos: 1 })
    return 0
  } catch (err) {
    return (err as { code?: number }).code ?? -1
  }
}

const sqlText = (value: string | null): string => value === null ? 'NULL' : `'${value}'`

export async function addUser (server: SqlServer, username: string, password: string, setting: string, salt: string | null = null, superuser = false): Promise<void> {
  const stored = await hashPassword(parseHashSpec(setting), password, salt ?? undefined)
  await server.sql(`insert into mqtt_user (username, password, salt, is_superuser) values (${sqlText(username)}, ${sqlText(stored)}, ${sqlText(salt)}, ${superuser ? 'true' : 'false'})`)
}

export async function addAcl (server: SqlServer, rows: Array<[allow: 0 | 1, ipaddr: string | null, username: string | null, clientid: string | null, access: 1 | 2 | 3, topic: string]>): Promise<void> {
  for (const [allow, ipaddr, username, clientid, access, topic] of rows) {
    await server.sql(`insert into mqtt_acl (allow, ipaddr, username, clientid, access, topic) values (${allow}, ${sqlText(ipaddr)}, ${sqlText(username)}, ${sqlText(clientid)}, ${access}, ${sqlText(topic)})`)
  }
}

// ------------------------------------------------------------------ authentication

export function authTests (t: Test, target: SqlTarget): void {
  let server: SqlServer
  t.before(async () => {
    server = await database(t, target)
    await addUser(server, 'alice', 'pw', 'sha256')
    await addUser(server, 'root', 'pw', 'sha256', null, true)
  })

  t.test('right password: allow; wrong or no password: deny (bad user name or password); unknown user: the next plugin', async (t) => {
    const broker = await brokerWith(t, target, server, {}, {}, { broker_auth_username: { 'auth.user.1.username': 'other', 'auth.user.1.password': 'pw2' } })
    t.equal(await connack(broker, 'alice', 'pw'), 0)
    t.equal(await connack(broker, 'alice', 'pw', 5), 0)
    t.equal(await connack(broker, 'alice', 'wrong'), 4)
    t.equal(await connack(broker, 'alice', 'wrong', 5), 0x86)
    t.equal(await connack(broker, 'alice', undefined), 4)
    t.equal(await connack(broker, 'other', 'pw2'), 0, 'not in the table: broker_auth_username decides')
    t.equal(await connack(broker, 'nobody', 'pw'), 5, 'unknown to both, allow_anonymous false')
    t.equal(await connack(broker, undefined, undefined), 5, 'no user name: the query matches nothing')
  })

  t.test('an unknown user falls through to allow_anonymous', async (t) => {
    const broker = await brokerWith(t, target, server, {}, { 'mqtt.allow_anonymous': 'true' })
    t.equal(await connack(broker, 'nobody', 'pw'), 0)
    t.equal(await connack(broker, 'alice', 'wrong'), 4, 'a known user with a wrong password is still denied')
  })

  t.test('superuser: the super query answers true', async (t) => {
    const broker = await brokerWith(t, target, server)
    const root = await client(broker, 'root', 'su-root')
    const alice = await client(broker, 'alice', 'su-alice')
    t.teardown(() => closeAll(root, alice))
    const superuser = (id: string): boolean | undefined => {
      const c = engineClient(broker.node.engine, id)
      return c === undefined ? undefined : clientState(c)?.info.isSuperuser
    }
    t.equal(superuser('su-root'), true)
    t.equal(superuser('su-alice'), false)
  })

  t.test('every password hash and salt position', async (t) => {
    const forms: Array<[setting: string, salt: string | null]> = [
      // no sha512: its 128 hex digits do not fit SPEC's password varchar(100) (§5.2 lists it for no SQL store)
      ['plain', null], ['md5', null], ['sha', null], ['sha256', null], ['bcrypt', null],
      ['pbkdf2,sha256,1000,20', 'pbkdf2salt'], [target.saltPrefix, 'NaCl'], [target.saltSuffix, 'NaCl']
    ]
    for (const [setting, salt] of forms) {
      const username = `h-${setting.replace(/[^a-z0-9]+/g, '-')}`
      await addUser(server, username, 'secret', setting, salt)
      const broker = await brokerWith(t, target, server, { [`${target.prefix}.password_hash`]: setting })
      t.equal(await connack(broker, username, 'secret'), 0, `${setting}: right password`)
      t.equal(await connack(broker, username, 'Secret'), 4, `${setting}: wrong password`)
      await broker.stop()
    }
    // a salted hash is checked against the suffix form: the positions are not interchangeable
    const broker = await brokerWith(t, target, server, { [`${target.prefix}.password_hash`]: target.saltSuffix })
    t.equal(await connack(broker, `h-${target.saltPrefix.replace(/[^a-z0-9]+/g, '-')}`, 'secret'), 4, 'a prefix-salted hash does not pass as suffix-salted')
  })

  t.test('SQL injection through the user name fails and leaves the table intact', async (t) => {
    const broker = await brokerWith(t, target, server, { [`${target.prefix}.password_hash`]: 'plain' })
    await addUser(server, 'plainuser', 'pw', 'plain')
    const before = await server.sql('select count(*) as n from mqtt_user')
    for (const username of ["' or '1'='1", "x' or '1'='1' -- ", "x'; drop table mqtt_user; --", "x\\' or 1=1 -- ", 'x" or "1"="1']) {
      t.equal(await connack(broker, username, 'pw'), 5, `${JSON.stringify(username)}: no row, not authorized`)
    }
    t.same(await server.sql('select count(*) as n from mqtt_user'), before, 'mqtt_user intact')
    t.equal(await connack(broker, 'plainuser', 'pw'), 0)
  })
}

// ------------------------------------------------------------------ ACL

export function aclTests (t: Test, target: SqlTarget): void {
  t.test('every ACL row form decides real SUBSCRIBE and PUBLISH packets', async (t) => {
    const server = await database(t, target)
    await addUser(server, 'alice', 'pw', 'sha256')
    await addUser(server, 'bob', 'pw', 'sha256')
    await addUser(server, 'root', 'pw', 'sha256', null, true)
    await addAcl(server, [
      [0, null, '$all', null, 3, 'all/denied'],
      [0, null, 'alice', null, 3, 'user/denied'],
      [0, null, null, 'c-special', 3, 'client/denied'],
      [0, '127.0.0.1', null, null, 3, 'ip/denied'],
      [0, null, '$all', null, 1, 'sub/denied'],
      [0, null, '$all', null, 2, 'pub/denied'],
      [0, null, '$all', null, 1, 'eq eq/#'],
      [1, null, '$all', null, 3, 'home/%u/#'],
      [0, null, '$all', null, 3, 'home/#'],
      [1, null, '$all', null, 3, 'dev/%c'],
      [0, null, '$all', null, 3, 'dev/#'],
      [1, null, 'bob', null, 1, 'first/+'],
      [0, null, '$all', null, 1, 'first/#']
    ])
    const broker = await brokerWith(t, target, server)
    const alice = await client(broker, 'alice', 'c-alice')
    const bob = await client(broker, 'bob', 'c-special')
    const root = await client(broker, 'root', 'c-root')
    t.teardown(() => closeAll(alice, bob, root))

    t.same(await granted(alice, 'all/denied', 'free/topic'), [0x87, 1], '$all deny; no row → ignore → acl_nomatch allow')
    t.same(await granted(bob, 'all/denied'), [0x87])
    t.same(await granted(alice, 'user/denied'), [0x87], 'username row')
    t.same(await granted(bob, 'user/denied'), [1], 'another user')
    t.same(await granted(bob, 'client/denied'), [0x87], 'clientid row')
    t.same(await granted(alice, 'client/denied'), [1], 'another client id')
    t.same(await granted(alice, 'ip/denied'), [0x87], 'ipaddr row')
    t.equal(await published(alice, 'ip/denied'), 0x87)
    t.same(await granted(alice, 'sub/denied'), [0x87], 'access 1 denies subscribe')
    t.equal(await published(alice, 'sub/denied'), 0, '… not publish')
    t.equal(await published(alice, 'pub/denied'), 0x87, 'access 2 denies publish')
    t.same(await granted(alice, 'pub/denied'), [1], '… not subscribe')
    t.equal(await published(alice, 'all/denied'), 0x87, 'access 3 denies both')
    t.same(await granted(alice, 'eq/#', 'eq/x'), [0x87, 1], 'eq <topic> matches only the literal filter')
    t.same(await granted(alice, 'home/alice/x', 'home/bob/x'), [1, 0x87], '%u: allow row, then the deny row')
    t.equal(await published(bob, 'home/bob/t'), 0)
    t.equal(await published(bob, 'home/alice/t'), 0x87)
    t.equal(await published(alice, 'dev/c-alice'), 0, '%c')
    t.equal(await published(alice, 'dev/c-special'), 0x87)
    t.same(await granted(bob, 'first/a', 'first/#'), [1, 0x87], 'an allow row must cover the filter; the first matching row decides')
    t.same(await granted(alice, 'first/a'), [0x87], 'the allow row is bob\'s')
    t.same(await granted(root, 'all/denied', 'user/denied', 'ip/denied'), [1, 1, 1], 'a superuser skips the ACL')
    t.equal(await published(root, 'pub/denied'), 0)

    // the allowed publish is really delivered
    const got = nextMessages(root, 1)
    await root.subscribeAsync('dev/+', { qos: 1 })
    await published(alice, 'dev/c-alice')
    t.equal((await got)[0].topic, 'dev/c-alice')
  })
}

// ------------------------------------------------------------------ resilience

const until = async (what: string, check: () => Promise<boolean>, timeoutMs = 30000): Promise<void> => {
  const end = Date.now() + timeoutMs
  while (!await check()) {
    if (Date.now() > end) throw new Error(`timed out waiting until ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

export function resilienceTests (t: Test, target: SqlTarget): void {
  const alarm = `${target.plugin}_unavailable`
  const raised = (broker: TestBroker): boolean => broker.node.observability.alarms.present().some((a) => a.id === alarm)

  t.test('server down at start: refused as server unavailable, the node stays up, the alarm is raised; it recovers by itself', async (t) => {
    const server = await database(t, target)
    await addUser(server, 'alice', 'pw', 'sha256')
    await server.stop()
    const broker = await brokerWith(t, target, server, { [`${target.prefix}.query_timeout`]: '2s' })
    t.equal(await connack(broker, 'alice', 'pw'), 3, 'MQTT 3.1.1: return code 3')
    t.equal(await connack(broker, 'alice', 'pw', 5), 0x88, 'MQTT 5: 0x88 server unavailable')
    t.ok(raised(broker), 'alarm present in the node service')
    const record = broker.node.observability.alarms.present().find((a) => a.id === alarm)
    t.match(record, { severity: 'warning', summary: new RegExp(`127\\.0\\.0\\.1:${server.port}`) })
    await server.restart()
    await until('alice is accepted again', async () => await connack(broker, 'alice', 'pw') === 0)
    t.notOk(raised(broker), 'alarm cleared')
  })

  t.test('unavailable.auth = ignore lets the chain go on', async (t) => {
    const server = await database(t, target)
    await server.stop()
    const broker = await brokerWith(t, target, server, { [`${target.prefix}.unavailable.auth`]: 'ignore', [`${target.prefix}.query_timeout`]: '1s' }, { 'mqtt.allow_anonymous': 'true' })
    t.equal(await connack(broker, 'alice', 'pw'), 0)
  })

  t.test('server killed mid-run and restarted: unavailable while down, $SYS alarm alert and clear, recovery without help', async (t) => {
    const server = await database(t, target)
    await addUser(server, 'alice', 'pw', 'sha256')
    await addUser(server, 'root', 'pw', 'sha256', null, true)
    await addAcl(server, [[0, null, '$all', null, 1, 'denied/#']])
    const broker = await brokerWith(t, target, server, { [`${target.prefix}.query_timeout`]: '2s' })
    const root = await client(broker, 'root', 'watcher')
    const alice = await client(broker, 'alice', 'kill-alice')
    t.teardown(() => closeAll(root, alice))
    await root.subscribeAsync(`$SYS/brokers/+/alarms/${alarm}/+`, { qos: 0 })
    t.equal(await connack(broker, 'alice', 'pw'), 0)
    t.same(await granted(alice, 'denied/1'), [0x87])

    const alert = nextMessages(root, 1, 20000)
    await server.kill()
    t.equal(await connack(broker, 'alice', 'pw'), 3, 'refused as unavailable while the server is down')
    t.equal(await connack(broker, 'alice', 'wrong', 5), 0x88)
    t.same(await granted(alice, 'denied/2'), [1], 'ACL: unavailable → ignore → acl_nomatch (allow)')
    t.match((await alert)[0].topic, new RegExp(`alarms/${alarm}/alert$`))
    t.ok(raised(broker))
    t.ok(broker.node.engine.connectedClients >= 2, 'the node and its clients stay up')

    const clear = nextMessages(root, 1, 40000)
    await server.restart()
    await until('alice is accepted again', async () => await connack(broker, 'alice', 'pw') === 0)
    t.match((await clear)[0].topic, new RegExp(`alarms/${alarm}/clear$`))
    t.notOk(raised(broker))
    t.equal(await connack(broker, 'alice', 'wrong'), 4, 'a wrong password is denied again')
    t.same(await granted(alice, 'denied/3'), [0x87], 'ACL rows apply again')
  })

  t.test('pool 8: 200 concurrent connects are all answered correctly', async (t) => {
    const server = await database(t, target)
    await addUser(server, 'alice', 'pw', 'sha256')
    await addUser(server, 'bob', 'pw', 'sha256')
    const broker = await brokerWith(t, target, server, { [`${target.prefix}.pool`]: 8 })
    const want: number[] = []
    const codes = await Promise.all(Array.from({ length: 200 }, async (_, i) => {
      const kind = i % 4
      want[i] = [0, 4, 5, 0][kind]
      const [user, password] = [['alice', 'pw'], ['alice', 'bad'], ['nobody', 'pw'], ['bob', 'pw']][kind]
      return await connack(broker, user, password, 4, `pool-${i}`)
    }))
    t.same(codes, want)
  })
}
