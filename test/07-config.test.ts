// etc/broker.conf parsing and validation: values, units, overrides, and the
// `file:line: key: why` error that stops start-up.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { writeFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { loadConfig, envToLines } from '../lib/config/load.js'
import { parseConfigText } from '../lib/config/parse.js'
import { Config } from '../lib/config/store.js'
import { INSTALL_ROOT } from '../lib/root.js'
import { startBroker, tempDir } from './helpers/broker.js'

t.test('the shipped etc/broker.conf loads and matches the documented defaults', async (t) => {
  const config = await loadConfig({ file: join(INSTALL_ROOT, 'etc/broker.conf') })
  t.equal(config.get('node.name'), 'broker@127.0.0.1')
  t.same(config.get('listener.tcp.external'), { host: '0.0.0.0', port: 1883 })
  t.same(config.get('listener.ssl.external'), { host: '0.0.0.0', port: 8883 })
  t.equal(config.get('listener.tcp.external.max_connections'), 1024000)
  t.equal(config.get('listener.tcp.external.max_conn_rate'), 1000)
  t.equal(config.get('listener.ssl.external.max_conn_rate'), 500)
  t.equal(config.get('listener.ws.external.max_clients'), 64)
  t.equal(config.get('listener.ws.external.mqtt_path'), '/mqtt')
  t.equal(config.get('mqtt.max_packet_size'), 1024 * 1024)
  t.equal(config.get('broker.sys_interval'), 60_000)
  t.equal(config.get('zone.external.session_expiry_interval'), 7200_000)
  t.equal(config.get('zone.external.max_inflight'), 32)
  const undocumented = config.items().filter((item) => item.origin === 'default').map((item) => item.key)
  t.same(undocumented, [], 'the shipped file sets, and so documents, every setting')
})

t.test('values: durations, sizes, switches, addresses', async (t) => {
  const config = new Config(parseConfigText([
    'broker.sys_interval = 30s',
    'zone.external.session_expiry_interval = 90',
    'mqtt.max_packet_size = 64KB',
    'mqtt.allow_anonymous = off',
    'listener.tcp.external = [::1]:1884',
    'listener.ws.external = off',
    'listener.tcp.external.max_conn_rate = 200/s',
    'node.name = "name with # hash"  # a comment'
  ].join('\n'), 'test.conf'))
  t.equal(config.get('broker.sys_interval'), 30_000)
  t.equal(config.get('zone.external.session_expiry_interval'), 90_000, 'a bare duration is seconds')
  t.equal(config.get('mqtt.max_packet_size'), 65536)
  t.equal(config.get('mqtt.allow_anonymous'), false)
  t.same(config.get('listener.tcp.external'), { host: '::1', port: 1884 })
  t.equal(config.get('listener.ws.external'), null, 'a listener can be switched off')
  t.equal(config.get('listener.tcp.external.max_conn_rate'), 200)
  t.equal(config.get('node.name'), 'name with # hash')
  t.equal(config.origin('mqtt.max_packet_size'), 'test.conf:3')
})

t.test('a bad line names file, line, key and why', async (t) => {
  const bad: Array<[string, RegExp]> = [
    ['mqtt.max_packet_size = lots', /^b\.conf:2: mqtt\.max_packet_size: "lots" is not a size/],
    ['mqtt.acl_nomatch = maybe', /^b\.conf:2: mqtt\.acl_nomatch: "maybe" is not one of allow \| deny/],
    ['listener.tcp.external = 70000', /^b\.conf:2: listener\.tcp\.external: port 70000 is out of range/],
    ['no.such.key = 1', /^b\.conf:2: no\.such\.key: unknown setting/],
    ['module.presence = true', /^b\.conf:2: module\.presence: unknown setting: it moved to etc\/plugins\/broker_modules\.conf/],
    // the retainer's keys moved to the broker_retainer plugin (issue 17): an older file says where
    ['retainer.max_payload_size = 1MB', /^b\.conf:2: retainer\.max_payload_size: unknown setting: it moved to etc\/plugins\/broker_retainer\.conf/],
    ['just some words', /^b\.conf:2: expected "key = value"/],
    ['zone.external.max_inflight = -1', /^b\.conf:2: zone\.external\.max_inflight: -1 is out of range/],
    ['node.name = "open', /^b\.conf:2: node\.name: unterminated quoted value/]
  ]
  for (const [line, message] of bad) {
    t.throws(() => new Config(parseConfigText(`# first line\n${line}\n`, 'b.conf')), message, line)
  }
})

t.test('environment variables and --set override the file, in that order', async (t) => {
  const dir = await tempDir()
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'broker.conf')
  await writeFile(file, 'node.name = from-file@host\nmqtt.max_clientid_len = 100\nbroker.sys_interval = 5s\n')
  const config = await loadConfig({
    file,
    env: { BROKER_NODE__NAME: 'from-env@host', BROKER_MQTT__MAX_CLIENTID_LEN: '200', OTHER: 'x' },
    sets: ['node.name=from-flag@host']
  })
  t.equal(config.get('node.name'), 'from-flag@host')
  t.equal(config.get('mqtt.max_clientid_len'), 200)
  t.equal(config.origin('mqtt.max_clientid_len'), 'env BROKER_MQTT__MAX_CLIENTID_LEN')
  t.equal(config.get('broker.sys_interval'), 5000)
  t.same(envToLines({ BROKER_X__Y: '1' }), [{ key: 'x.y', value: '1', origin: 'env BROKER_X__Y' }])
  await t.rejects(loadConfig({ file: join(dir, 'missing.conf') }), /missing\.conf: cannot read configuration file \(ENOENT\)/)
  await t.rejects(loadConfig({ env: { BROKER_MQTT__ACL_NOMATCH: 'sometimes' } }), /^env BROKER_MQTT__ACL_NOMATCH: mqtt\.acl_nomatch:/)
})

t.test('bin/broker refuses to start on a bad line and says where', async (t) => {
  const dir = await tempDir()
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'broker.conf')
  await writeFile(file, '## a config\nnode.name = ok@host\n\nmqtt.max_packet_size = huge\n')
  const child = spawn(process.execPath, [join(INSTALL_ROOT, 'bin/broker'), '--config', file, '--data-dir', dir], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
  const [code] = await once(child, 'exit') as [number]
  t.equal(code, 1, 'exits with status 1')
  t.equal(stderr.trim(), `broker: ${file}:4: mqtt.max_packet_size: "huge" is not a size (e.g. 1MB, 64KB, or bytes)`)
})

t.test('bin/broker names an unreadable certificate file', async (t) => {
  const dir = await tempDir()
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const child = spawn(process.execPath, [join(INSTALL_ROOT, 'bin/broker'), '--data-dir', dir,
    '--set', 'listener.tcp.external=off', '--set', 'listener.ws.external=off', '--set', 'listener.wss.external=off',
    '--set', 'listener.ssl.external=127.0.0.1:0', '--set', 'listener.ssl.external.certfile=/nonexistent/cert.pem'], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
  const [code] = await once(child, 'exit') as [number]
  t.equal(code, 1)
  t.match(stderr, /--set listener\.ssl\.external\.certfile=\/nonexistent\/cert\.pem: listener\.ssl\.external\.certfile: cannot read \/nonexistent\/cert\.pem \(ENOENT\)/)
})

t.test('bin/broker --help and an unknown flag', async (t) => {
  for (const [args, code, pattern] of [[['--help'], 0, /Usage: broker/], [['--bogus'], 2, /Unknown option '--bogus'/]] as const) {
    const child = spawn(process.execPath, [join(INSTALL_ROOT, 'bin/broker'), ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (d: Buffer) => { out += d.toString() })
    child.stderr.on('data', (d: Buffer) => { out += d.toString() })
    t.equal((await once(child, 'exit'))[0], code)
    t.match(out, pattern)
  }
})

t.test('log.console.level changed at run time applies to the node log', async (t) => {
  const broker = await startBroker()
  t.teardown(broker.stop)
  t.equal(broker.node.logger.level, 'error')
  broker.node.config.set('log.console.level', 'debug', 'test')
  t.equal(broker.node.logger.level, 'debug')
  broker.node.config.set('log.console.level', 'warning', 'test')
  t.equal(broker.node.logger.level, 'warn', 'EMQ X names map onto pino levels')
})
