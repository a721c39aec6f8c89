// Signals on a real `bin/broker` process (issue 22 #2): SIGHUP reloads the
// ACL file, the log level, the TLS certificate and a plugin's settings while
// an MQTT client stays connected; a second SIGTERM during the graceful stop
// is ignored with a log line and the process exits once, cleanly; SIGTERM
// during start-up unwinds the start (no listener opened) and exits 0.
import { execFileSync } from 'node:child_process'
import { X509Certificate } from 'node:crypto'
import { once } from 'node:events'
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises'
import { createServer, connect as netConnect, type Socket } from 'node:net'
import { join } from 'node:path'
import { connect as tlsConnect } from 'node:tls'
import t from 'tap'
import { tempDir } from './helpers/broker.js'
import { boundPort, isolatedSettings, spawnWithConf } from './helpers/broker-process.js'
import { closeAll, connect } from './helpers/mqtt.js'
import { INSTALL_ROOT } from '../lib/root.js'

/** The SHA-256 fingerprint of the certificate a new TLS connection to `port` is served. */
async function servedFingerprint (port: number): Promise<string> {
  return await new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      resolve(socket.getPeerX509Certificate()!.fingerprint256)
      socket.destroy()
    })
    socket.once('error', reject)
  })
}

const fingerprint = async (file: string): Promise<string> => new X509Certificate(await readFile(file)).fingerprint256

t.test('SIGHUP reloads while a client stays connected; a second SIGTERM is ignored', async (t) => {
  const dir = await tempDir()
  const data = join(dir, 'data')
  await mkdir(join(data, 'plugins'), { recursive: true })
  await writeFile(join(data, 'loaded_plugins'), 'broker_retainer.\n')
  const acl = join(dir, 'acl.conf')
  await writeFile(acl, '{deny, all, publish, ["locked/#"]}.\n{allow, all}.\n')
  const cert = join(dir, 'cert.pem')
  const key = join(dir, 'key.pem')
  await copyFile(join(INSTALL_ROOT, 'etc', 'certs', 'cert.pem'), cert)
  await copyFile(join(INSTALL_ROOT, 'etc', 'certs', 'key.pem'), key)
  // the renewed certificate, made now by Debian's openssl
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2',
    '-subj', '/CN=renewed', '-keyout', join(dir, 'new-key.pem'), '-out', join(dir, 'new-cert.pem')], { stdio: 'ignore' })
  const conf = join(dir, 'broker.conf')
  const settings = { 'listener.ssl.external': '127.0.0.1:0', 'listener.ssl.external.certfile': cert, 'listener.ssl.external.keyfile': key, 'mqtt.acl_file': acl }
  await writeFile(conf, isolatedSettings(settings))
  const broker = spawnWithConf(['-c', conf, '-d', data])
  t.teardown(() => { broker.child.kill('SIGKILL') })
  await broker.line('broker node is running')
  const port = boundPort(broker.lines, 'mqtt:tcp:external')
  const tlsPort = boundPort(broker.lines, 'mqtt:ssl:external')

  const stays = await connect(`mqtt://127.0.0.1:${port}`, { clientId: 'stays', protocolVersion: 5 })
  let closes = 0
  stays.on('close', () => { closes++ })
  await t.rejects(stays.publishAsync('locked/a', 'x', { qos: 1 }), { code: 135 }, 'the ACL file denies locked/# before the reload')
  t.equal(await servedFingerprint(tlsPort), await fingerprint(cert), 'the first certificate is served')

  await writeFile(acl, '{allow, all}.\n')
  await writeFile(conf, isolatedSettings({ ...settings, 'log.console.level': 'debug' }))
  await copyFile(join(dir, 'new-cert.pem'), cert)
  await copyFile(join(dir, 'new-key.pem'), key)
  await writeFile(join(data, 'plugins', 'broker_retainer.conf'), 'retainer.max_payload_size = 2048\n')
  const from = broker.lines.length
  broker.child.kill('SIGHUP')
  const done = JSON.parse(await broker.line('"reload done"', from)) as { settings: string[], acl: unknown, tls: string[], plugins: string[] }
  t.same(done.settings, ['log.console.level'], 'the log level changed by the reload')
  t.same(done.acl, { rules: 1 }, 'the ACL file read again')
  t.same(done.tls, ['listener.ssl.external'], 'the TLS listener took the new certificate')
  t.match(done.plugins, [/^broker_retainer: (live|reloaded)$/], 'the retainer took its new settings')
  t.match(await broker.line('"setting changed by the reload"', from), /"key":"log\.console\.level","value":"debug"/)

  await stays.publishAsync('locked/a', 'x', { qos: 1 })
  t.pass('the connected client may publish to locked/# now: its cached ACL answers were forgotten')
  t.equal(await servedFingerprint(tlsPort), await fingerprint(join(dir, 'new-cert.pem')), 'a new TLS connection gets the new certificate')
  const debugFrom = broker.lines.length
  const later = await connect(`mqtt://127.0.0.1:${port}`, { clientId: 'later' })
  const connected = JSON.parse(await broker.line('"client connected"', debugFrom)) as { level: string, clientId: string }
  t.same([connected.level, connected.clientId], ['debug', 'later'], 'debug lines are logged now')
  t.ok(stays.connected, 'the client connected before the reload is still connected')
  t.equal(closes, 0, 'and its connection never closed')
  await closeAll(later)

  // a connection that never sends CONNECT holds the listener's close: the stop lasts until it goes
  const idle: Socket = netConnect(port, '127.0.0.1')
  await new Promise((resolve) => idle.once('connect', resolve))
  const stopFrom = broker.lines.length
  broker.child.kill('SIGTERM')
  await broker.line('"stopping"', stopFrom)
  broker.child.kill('SIGTERM')
  t.match(await broker.line('already stopping', stopFrom), /"signal":"SIGTERM"/, 'the second SIGTERM is logged and ignored')
  broker.child.kill('SIGHUP')
  await broker.line('SIGHUP ignored', stopFrom)
  idle.destroy()
  t.equal(await broker.exited, 0, 'the process exits 0')
  t.equal(broker.lines.filter((l) => l.includes('"broker node stopped"')).length, 1, 'the node stopped once')
  t.equal(broker.lines.filter((l) => l.includes('"msg":"stopping"')).length, 1, 'one stop was started')
  await closeAll(stays)
})

t.test('SIGTERM during start-up unwinds the start and exits 0', async (t) => {
  // a Redis that accepts and never answers: broker_auth_redis' load waits for it (auth.redis.query_timeout)
  const silent = new Set<Socket>()
  let reachedRedis: () => void = () => {}
  const reached = new Promise<void>((resolve) => { reachedRedis = resolve })
  const fakeRedis = createServer((socket) => { silent.add(socket); reachedRedis() })
  t.teardown(() => { for (const s of silent) s.destroy(); fakeRedis.close() })
  fakeRedis.listen(0, '127.0.0.1')
  await once(fakeRedis, 'listening')
  const redisPort = (fakeRedis.address() as { port: number }).port
  const dir = await tempDir()
  const data = join(dir, 'data')
  await mkdir(join(data, 'plugins'), { recursive: true })
  await writeFile(join(data, 'loaded_plugins'), 'broker_auth_redis.\nbroker_retainer.\n')
  await writeFile(join(data, 'plugins', 'broker_auth_redis.conf'), `auth.redis.server = 127.0.0.1:${redisPort}\nauth.redis.query_timeout = 5s\n`)
  const conf = join(dir, 'broker.conf')
  await writeFile(conf, isolatedSettings({}))
  const broker = spawnWithConf(['-c', conf, '-d', data])
  t.teardown(() => { broker.child.kill('SIGKILL') })
  await reached
  broker.child.kill('SIGTERM')
  t.equal(await broker.exited, 0, 'exit 0')
  t.ok(broker.lines.some((l) => l.includes('"stopped during start-up"') && l.includes('"signal":"SIGTERM"')), 'the log says the start was stopped')
  t.notOk(broker.lines.some((l) => l.includes('"listener started"')), 'no listener was opened')
  t.notOk(broker.lines.some((l) => l.includes('"broker node is running"')), 'the node never ran')
  t.ok(broker.lines.some((l) => l.includes('"plugin unloaded"') && l.includes('broker_auth_redis')), 'the plugin that had loaded was unloaded')
})
