// One timestamp form per surface and the warnings at start (issue 22 #5), on a
// real bin/broker: JSON log records carry level names and RFC 3339 times with
// the offset; the log warns about MQTT open to anonymous clients on a public
// address and about the management API's shipped credentials, and stops
// warning once they are changed; the API's and broker_ctl's times are SPEC's.
import t from 'tap'
import { rfc3339, specTime } from '../lib/timestamps.js'
import { isLoopback, publicAnonymousListeners } from '../lib/start-warnings.js'
import { freePort, spawnBroker, tempDir, writePluginFiles } from './helpers/broker.js'
import { ctl, ctlJson } from './helpers/ctl.js'

const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d$/
const SPEC = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/

t.test('the two forms', async (t) => {
  const at = new Date(2026, 0, 2, 3, 4, 5, 6)
  t.equal(specTime(at), '2026-01-02 03:04:05')
  t.match(rfc3339(at), RFC3339)
  t.equal(new Date(rfc3339(at)).getTime(), at.getTime(), 'RFC 3339 names the same instant')
  t.equal(specTime(at.getTime()), specTime(at), 'milliseconds or a Date')
})

t.test('which listeners are public', async (t) => {
  for (const host of ['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost', '::ffff:127.0.0.1']) t.ok(isLoopback(host), host)
  for (const host of ['0.0.0.0', '::', '', '10.0.0.1', '128.0.0.1']) t.notOk(isLoopback(host), host)
  const listeners = [{ id: 'mqtt:tcp:external', protocol: 'mqtt:tcp', address: { host: '0.0.0.0', port: 1883 } }, { id: 'mqtt:ws:external', protocol: 'mqtt:ws', address: { host: '127.0.0.1', port: 8083 } }, { id: 'http:management', protocol: 'http:management', address: { host: '0.0.0.0', port: 8081 } }]
  t.same(publicAnonymousListeners(true, listeners), ['mqtt:tcp:external 0.0.0.0:1883'])
  t.same(publicAnonymousListeners(false, listeners), [])
})

t.test('a real node: level names, RFC 3339 times, the warnings at start', async (t) => {
  const dir = await tempDir()
  const apiPort = await freePort()
  const etcDir = await writePluginFiles(dir, { broker_management: { 'management.listener.http': `127.0.0.1:${apiPort}` } })
  const port = await freePort()
  const start = async (): Promise<Awaited<ReturnType<typeof spawnBroker>>> => await spawnBroker(dir, { 'listener.tcp.external': `0.0.0.0:${port}`, 'log.console.format': 'json', 'plugins.etc_dir': etcDir }, port)
  const first = await start()
  t.teardown(() => { first.child.kill('SIGKILL') })
  const records = (lines: string[]): Array<Record<string, unknown>> => lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>)
  const log = records(first.lines)
  t.ok(log.length > 3)
  for (const r of log) {
    t.ok(['trace', 'debug', 'info', 'warn', 'error', 'fatal'].includes(r.level as string), `level by name: ${String(r.level)}`)
    t.match(r.time, RFC3339)
  }
  const warnings = log.filter((r) => r.level === 'warn').map((r) => r.msg as string)
  t.ok(warnings.some((m) => m.startsWith('mqtt.allow_anonymous is on and MQTT listens on a public address')), 'anonymous on 0.0.0.0')
  t.match(log.find((r) => (r.msg as string).startsWith('mqtt.allow_anonymous')), { listeners: [`mqtt:tcp:external 0.0.0.0:${port}`] })
  t.ok(warnings.some((m) => m.startsWith('the administrator user admin still has the default password public')), 'default admin password')
  t.ok(warnings.some((m) => m.startsWith('the management application admin still has the default secret public')), 'default application secret')

  // the API and broker_ctl write SPEC's form
  const auth = `Basic ${Buffer.from('admin:public').toString('base64')}`
  const brokers = await (await fetch(`http://127.0.0.1:${apiPort}/api/v3/brokers/`, { headers: { authorization: auth } })).json() as Array<{ datetime: string }>
  t.match(brokers[0].datetime, SPEC)
  const drain = await (await fetch(`http://127.0.0.1:${apiPort}/api/v3/nodes/${encodeURIComponent((brokers[0] as unknown as { node: string }).node)}/drain`, { method: 'PUT', headers: { authorization: auth } })).json() as { started_at: string, finished_at: string }
  t.match(drain.started_at, SPEC, 'a drain is timed in SPEC form')
  t.equal((await ctl(dir, 'admins', 'passwd', 'admin', 'changed-pw')).code, 0)
  t.equal((await ctl(dir, 'banned', 'add', 'client_id', 'x')).code, 0)
  const banned = await ctlJson<Array<{ until: number }>>(dir, 'banned', 'list')
  t.equal(typeof banned.data[0].until, 'number', '--json keeps the unix seconds of SPEC §2.16')
  t.match((await ctl(dir, 'banned', 'list')).stdout, /until=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d/, 'the text form writes SPEC\'s time')
  first.child.kill('SIGTERM')
  await first.exited

  // changed credentials, anonymous off: no warning
  const second = await spawnBroker(dir, { 'listener.tcp.external': `0.0.0.0:${port}`, 'log.console.format': 'json', 'plugins.etc_dir': etcDir, 'mqtt.allow_anonymous': 'false' }, port)
  t.teardown(() => { second.child.kill('SIGKILL') })
  const after = records(second.lines).filter((r) => r.level === 'warn').map((r) => r.msg as string)
  t.notOk(after.some((m) => m.startsWith('mqtt.allow_anonymous')), 'anonymous off: no warning')
  t.notOk(after.some((m) => m.startsWith('the administrator user admin still has the default password')), 'password changed: no warning')
  second.child.kill('SIGTERM')
  await second.exited
})
