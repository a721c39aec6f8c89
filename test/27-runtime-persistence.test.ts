// Runtime changes persist (issue 10): configuration items changed through the
// API and broker_ctl, plugin settings written through the API, loaded and
// unloaded plugins, applications, administrators, banned entries and the users
// of broker_auth_username/broker_auth_clientid are all there after a real
// restart of the node process (kill -9 and SIGTERM), while every file under
// etc/ stays as the operator wrote it. Runtime overrides live in
// data/configs.override and data/plugins/<plugin>.conf.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import t, { type Test } from 'tap'
import { loadConfig } from '../lib/config/load.js'
import { changeSetting, OVERRIDE_FILE } from '../lib/config/overrides.js'
import { INSTALL_ROOT } from '../lib/root.js'
import { freePort, tempDir } from './helpers/broker.js'
import { ctl } from './helpers/ctl.js'
import { closeAll, connect, nextMessages } from './helpers/mqtt.js'

const HEADER = [
  '# Settings changed at run time (management API, broker_ctl), written by the broker.',
  '# They apply over etc/broker.conf; BROKER_* environment variables and --set apply over them.',
  '# Edit only while the node is stopped; setting a value back to the start-time one removes its line.'
].join('\n') + '\n'

// node processes started and stopped again and again, and broker_ctl runs (a Node.js process each): it ran out
// of tap's 120 s beside 5 other test files (load 20 and more), so the limit is generous
t.setTimeout(480_000)

t.test('loadConfig: file < data/configs.override < env < --set, each value naming where it came from', async (t) => {
  const dir = await tempDir()
  t.teardown(async () => await rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'broker.conf')
  await writeFile(file, `node.data_dir = ${dir}\nbroker.sys_interval = 1m\nmqtt.allow_anonymous = true\nmqtt.acl_nomatch = allow\n`)
  const overrides = join(dir, OVERRIDE_FILE)
  await writeFile(overrides, '# by the broker\nbroker.sys_interval = 7s\nmqtt.allow_anonymous = false\nmqtt.acl_nomatch = deny\n')

  const config = await loadConfig({ file, env: { BROKER_MQTT__ALLOW_ANONYMOUS: 'true' }, sets: ['mqtt.acl_nomatch=allow'], root: '/' })
  t.equal(config.get('broker.sys_interval'), 7000)
  t.equal(config.origin('broker.sys_interval'), `${overrides}:2`)
  t.equal(config.get('mqtt.allow_anonymous'), true)
  t.equal(config.origin('mqtt.allow_anonymous'), 'env BROKER_MQTT__ALLOW_ANONYMOUS')
  t.equal(config.origin('mqtt.acl_nomatch'), '--set mqtt.acl_nomatch=allow')
  t.same(config.overrides?.shadowed(), [
    { key: 'mqtt.allow_anonymous', value: 'false', origin: `${overrides}:3`, by: 'env BROKER_MQTT__ALLOW_ANONYMOUS' },
    { key: 'mqtt.acl_nomatch', value: 'deny', origin: `${overrides}:4`, by: '--set mqtt.acl_nomatch=allow' }
  ])

  const plain = await loadConfig({ file })
  t.equal(plain.get('broker.sys_interval'), 60000, 'without a root (broker_ctl, embedding) no override is read')
  t.equal(plain.overrides, undefined)

  await writeFile(overrides, 'broker.sys_interval = soon\n')
  await t.rejects(loadConfig({ file, root: '/' }), { message: `${overrides}:1: broker.sys_interval: ` }, 'a bad override names its file and line')
  await writeFile(overrides, 'node.data_dir = /elsewhere\n')
  await t.rejects(loadConfig({ file, root: '/' }), { message: `${overrides}:1: node.data_dir: cannot be a runtime override` })
})

t.test('changeSetting: kept at once, a start-time value removes the line, refusals leave file and setting as they were', async (t) => {
  const dir = await tempDir()
  t.teardown(async () => await rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'broker.conf')
  await writeFile(file, `node.data_dir = ${dir}\nbroker.sys_interval = 1m\n`)
  const overrides = join(dir, OVERRIDE_FILE)
  const config = await loadConfig({ file, sets: ['mqtt.acl_nomatch=deny'], root: '/' })
  const changes: unknown[] = []
  config.on('change', (key, value) => changes.push([key, value]))

  changeSetting(config, 'broker.sys_interval', '7s', 'management api')
  changeSetting(config, 'mqtt.max_packet_size', '2KB', 'broker_ctl')
  changeSetting(config, 'mqtt.acl_nomatch', 'allow', 'management api')
  t.equal(await readFile(overrides, 'utf8'), HEADER + 'mqtt.broker.sys_interval = 7s\nmqtt.max_packet_size = 2KB\nmqtt.acl_nomatch = allow\n')
  t.equal(config.get('broker.sys_interval'), 7000)
  t.equal(config.origin('broker.sys_interval'), `${overrides} (management api)`)
  t.equal(config.origin('mqtt.max_packet_size'), `${overrides} (broker_ctl)`)
  t.same(changes, [['mqtt.broker.sys_interval', 7000], ['mqtt.max_packet_size', 2048], ['mqtt.acl_nomatch', 'allow']])

  changeSetting(config, 'broker.sys_interval', '60s', 'management api')
  t.equal(config.origin('broker.sys_interval'), `${file}:2`, 'the file\'s value (written differently) is back in force')
  changeSetting(config, 'mqtt.acl_nomatch', 'deny', 'management api')
  t.equal(config.origin('mqtt.acl_nomatch'), '--set mqtt.acl_nomatch=deny')
  t.equal(await readFile(overrides, 'utf8'), HEADER + 'mqtt.max_packet_size = 2KB\n')

  t.throws(() => changeSetting(config, 'mqtt.max_packet_size', 'huge', 'management api'), { name: 'ConfigError', message: 'management api: mqtt.max_packet_size: ' })
  t.throws(() => changeSetting(config, 'node.data_dir', '/elsewhere', 'management api'), { name: 'SettingKindError', message: 'node.data_dir is fixed' })
  t.throws(() => changeSetting(config, 'broker.no_such_key', '1', 'management api'), { message: 'unknown setting' })
  t.throws(() => changeSetting(config, 'zone.external.mountpoint', 'a\nb', 'management api'), { message: 'cannot be written' })
  t.equal(await readFile(overrides, 'utf8'), HEADER + 'mqtt.max_packet_size = 2KB\n')

  // a folder where the file should be: the rename fails, for root too
  await rm(overrides)
  await mkdir(overrides)
  t.throws(() => changeSetting(config, 'mqtt.max_packet_size', '4KB', 'management api'), { name: 'OverrideWriteError', message: `${overrides}: cannot write the runtime overrides` })
  t.equal(config.get('mqtt.max_packet_size'), 2048, 'a value that could not be kept is not applied')
  t.equal(config.origin('mqtt.max_packet_size'), `${overrides} (broker_ctl)`)
  t.same((await readdir(dir)).sort(), ['broker.conf', OVERRIDE_FILE], 'no temporary file left')
  await rm(overrides, { recursive: true })

  changeSetting(config, 'mqtt.max_packet_size', '1MB', 'management api')
  await t.rejects(readFile(overrides), { code: 'ENOENT' }, 'no override left: no file')

  const transient = await loadConfig({ file })
  changeSetting(transient, 'broker.sys_interval', '5s', 'test')
  t.equal(transient.origin('broker.sys_interval'), 'test', 'a config without overrides changes for this run only')
  await t.rejects(readFile(overrides), { code: 'ENOENT' })
})

// --- a real node process, restarted on the same folders ---

interface Running { child: ChildProcess, lines: string[], exited: Promise<number | string> }

/** Starts `bin/broker -c <root>/etc/broker.conf`; resolves once it runs (or rejects with its output when it exits first). */
async function startNode (root: string, args: string[] = []): Promise<Running> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('BROKER_')))
  const child = spawn(process.execPath, [join(INSTALL_ROOT, 'bin', 'broker'), '-c', join(root, 'etc', 'broker.conf'), ...args], { stdio: ['ignore', 'pipe', 'pipe'], env })
  const lines: string[] = []
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)))
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      lines.push(line)
      if (line.includes('broker node is running')) resolve()
    })
    createInterface({ input: child.stderr! }).on('line', (line) => lines.push(line))
    void exited.then((code) => reject(Object.assign(new Error(`broker exited (${code}) before running:\n${lines.join('\n')}`), { lines })))
  })
  return { child, lines, exited }
}

async function stopNode (node: Running, signal: NodeJS.Signals): Promise<void> {
  node.child.kill(signal)
  await node.exited
}

/** Every file under `dir` with its text. */
async function snapshot (dir: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {}
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) {
      const path = join(entry.parentPath, entry.name)
      files[path] = await readFile(path, 'utf8')
    }
  }
  return files
}

async function connackCode (url: string, options: Parameters<typeof connect>[1]): Promise<number> {
  try {
    await closeAll(await connect(url, { protocolVersion: 5, reconnectPeriod: 0, ...options }))
    return 0
  } catch (err) {
    return (err as { code?: number }).code ?? -1
  }
}

t.test('every kind of runtime change survives a restart of the node process', async (t) => {
  const root = await tempDir('broker-persist-')
  t.teardown(async () => await rm(root, { recursive: true, force: true }))
  const dataDir = join(root, 'data')
  const etcPlugins = join(root, 'etc', 'plugins')
  await mkdir(etcPlugins, { recursive: true })
  await mkdir(dataDir)
  const port = await freePort()
  const httpPort = await freePort()
  const nodeName = 'persist@127.0.0.1'
  await writeFile(join(root, 'etc', 'broker.conf'), [
    '## written by the operator',
    `node.name = ${nodeName}`,
    `node.data_dir = ${dataDir}`,
    `plugins.etc_dir = ${etcPlugins}`,
    `listener.tcp.external = 127.0.0.1:${port}`,
    'listener.ssl.external = off',
    'listener.ws.external = off',
    'listener.wss.external = off',
    'log.console.level = info',
    'broker.sys_interval = 1m',
    ''
  ].join('\n'))
  await writeFile(join(etcPlugins, 'broker_management.conf'), `management.listener.http = 127.0.0.1:${httpPort}\n`)
  await writeFile(join(etcPlugins, 'broker_auth_username.conf'), '# users are added with broker_ctl\n')
  await writeFile(join(etcPlugins, 'broker_auth_clientid.conf'), '')
  await writeFile(join(etcPlugins, 'broker_auth_jwt.conf'), 'auth.jwt.secret = not-so-secret\n')
  await writeFile(join(etcPlugins, 'broker_plugin_template.conf'), '## the greeting prefix\ntemplate.greeting_topic = greetings\n')
  await writeFile(join(dataDir, 'loaded_plugins'), 'broker_management.\nbroker_retainer.\nbroker_auth_username.\nbroker_auth_clientid.\nbroker_auth_jwt.\n')
  const etc = await snapshot(join(root, 'etc'))

  const mqttUrl = `mqtt://127.0.0.1:${port}`
  const http = async (method: string, path: string, body?: unknown, auth = 'admin:public'): Promise<{ status: number, body: unknown }> => {
    const res = await fetch(`http://127.0.0.1:${httpPort}/api/v3${path}`, {
      method,
      headers: { authorization: `Basic ${Buffer.from(auth).toString('base64')}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body)
    })
    const text = await res.text()
    let parsed: unknown = text
    try {
      parsed = JSON.parse(text)
    } catch {
      // not JSON: the text itself
    }
    return { status: res.status, body: parsed }
  }
  const run = async (...args: string[]): Promise<string> => {
    const result = await ctl(dataDir, ...args)
    if (result.code !== 0) throw new Error(`broker_ctl ${args.join(' ')}: ${result.code} ${result.stderr}`)
    return result.stdout
  }
  const configValue = async (key: string): Promise<unknown> => {
    const items = (await http('GET', `/nodes/${nodeName}/configs/`)).body as Array<{ key: string, value: unknown }>
    return items.find((item) => item.key === key)?.value
  }
  const greetingTopic = async (clientId: string): Promise<string> => {
    const watcher = await connect(mqttUrl, { clientId: `watch-${clientId}`, username: 'alice', password: 's3cret' })
    try {
      await watcher.subscribeAsync('#')
      const got = nextMessages(watcher, 1)
      await closeAll(await connect(mqttUrl, { clientId, username: 'alice', password: 's3cret' }))
      return (await got)[0].topic
    } finally {
      await closeAll(watcher)
    }
  }
  const overrideText = async (): Promise<string | undefined> => await readFile(join(dataDir, OVERRIDE_FILE), 'utf8').catch(() => undefined)

  let node = await startNode(root)
  t.teardown(async () => {
    if (node.child.exitCode === null && node.child.signalCode === null) await stopNode(node, 'SIGKILL')
  })

  // --- changes, through the API and broker_ctl ---
  t.equal((await http('PUT', '/configs/broker', { key: 'mqtt.allow_anonymous', value: 'false' })).status, 200)
  t.equal((await http('PUT', `/nodes/${nodeName}/configs/broker`, { key: 'broker.sys_interval', value: '7s' })).status, 200)
  t.equal((await http('PUT', '/configs/broker_retainer', { key: 'retainer.max_payload_size', value: '2KB' })).status, 200)
  t.equal((await http('PUT', '/configs/broker_retainer', { key: 'retainer.max_payload_size', value: '1MB' })).status, 200, 'back to the default')
  await run('log', 'set-level', 'debug')
  await run('users', 'add', 'alice', 's3cret')
  await run('users', 'add', 'bob', 'b0b')
  await run('users', 'del', 'bob')
  await run('clientid', 'add', 'dev-1', 'pw1')
  t.equal(await connackCode(mqttUrl, { clientId: 'anon' }), 0x87, 'anonymous access is off now')

  await run('plugins', 'load', 'broker_plugin_template')
  t.equal((await http('PUT', `/nodes/${nodeName}/plugins/broker_auth_jwt/unload`)).status, 200)
  t.equal((await http('PUT', `/nodes/${nodeName}/plugin_configs/broker_plugin_template`, { 'template.greeting_topic': 'persisted' })).status, 200)
  t.equal(await greetingTopic('g1'), 'persisted/g1')

  t.equal((await http('POST', '/apps/', { app_id: 'api-app', name: 'Api', secret: 'api-secret' })).status, 200)
  const ctlSecret = /^AppSecret: (\S+)\n$/.exec(await run('mgmt', 'insert', 'ctl-app', 'CtlApp'))?.[1]
  t.ok(ctlSecret)
  await run('mgmt', 'insert', 'gone-app', 'Gone')
  t.equal((await http('DELETE', '/apps/gone-app')).status, 200)
  t.equal((await http('POST', '/users/', { username: 'api-admin', password: 'pw-a', tags: 'administrator' })).status, 200)
  await run('admins', 'add', 'ctl-admin', 'pw-c', 'administrator')

  const until = Math.floor(Date.now() / 1000) + 3600
  t.equal((await http('POST', '/banned/', { who: 'bad-client', as: 'client_id', reason: 'api', until })).status, 200)
  await run('banned', 'add', 'username', 'bad-user', '1h', 'ctl')
  await run('banned', 'add', 'client_id', 'pardoned', '1h')
  await run('banned', 'del', 'client_id', 'pardoned')

  t.equal(await overrideText(), HEADER + 'mqtt.allow_anonymous = false\nmqtt.broker.sys_interval = 7s\nlog.console.level = debug\nlog.file.level = debug\n')
  t.equal(await readFile(join(dataDir, 'plugins', 'broker_plugin_template.conf'), 'utf8'), '# Settings of broker_plugin_template changed at run time (management API), written by the broker.\n' +
    '# They apply over etc/plugins/broker_plugin_template.conf, which is left as the operator wrote it.\ntemplate.greeting_topic = persisted\n')
  t.same(await snapshot(join(root, 'etc')), etc, 'etc/ is as the operator wrote it')

  const everythingKept = async (t: Test, label: string): Promise<void> => {
    t.equal(await configValue('mqtt.allow_anonymous'), 'false', `${label}: API config change`)
    t.equal(await configValue('mqtt.broker.sys_interval'), '7s', `${label}: API config change on one node`)
    t.equal(await configValue('retainer.max_payload_size'), '1048576', `${label}: a setting put back stays put back`)
    t.equal(await connackCode(mqttUrl, { clientId: 'anon' }), 0x87, `${label}: anonymous access stays off`)
    t.equal(await run('log', 'primary-level'), 'debug\n', `${label}: broker_ctl log set-level`)

    const plugins = (await http('GET', `/nodes/${nodeName}/plugins/`)).body as Array<{ name: string, active: boolean }>
    const active = plugins.filter((p) => p.active).map((p) => p.name).sort()
    t.same(active, ['broker_auth_clientid', 'broker_auth_username', 'broker_management', 'broker_plugin_template', 'broker_retainer'], `${label}: loaded and unloaded plugins`)
    t.equal(await readFile(join(dataDir, 'loaded_plugins'), 'utf8'), 'broker_management.\nbroker_retainer.\nbroker_auth_username.\nbroker_auth_clientid.\nbroker_plugin_template.\n')
    t.same((await http('GET', `/nodes/${nodeName}/plugin_configs/broker_plugin_template`)).body,
      [{ key: 'template.greeting_topic', value: 'persisted', desc: '', required: true, datatype: 'string' }], `${label}: plugin settings from the API`)
    t.equal(await greetingTopic(`after-${label}`), `persisted/after-${label}`, `${label}: the plugin runs with them`)

    t.equal((await http('GET', '/brokers/', undefined, 'api-app:api-secret')).status, 200, `${label}: app added through the API`)
    t.equal((await http('GET', '/brokers/', undefined, `ctl-app:${ctlSecret}`)).status, 200, `${label}: app added with broker_ctl`)
    t.equal((await http('GET', '/apps/gone-app')).status, 404, `${label}: a deleted app stays deleted`)
    t.equal((await http('POST', '/auth', { username: 'api-admin', password: 'pw-a' })).status, 200, `${label}: administrator added through the API`)
    t.equal((await http('POST', '/auth', { username: 'ctl-admin', password: 'pw-c' })).status, 200, `${label}: administrator added with broker_ctl`)

    const banned = ((await http('GET', '/banned/')).body as { items: Array<{ who: string, as: string }> }).items
    t.same(banned.map((b) => `${b.as}:${b.who}`).sort(), ['client_id:bad-client', 'username:bad-user'], `${label}: banned entries`)
    t.equal(await connackCode(mqttUrl, { clientId: 'bad-client', username: 'alice', password: 's3cret' }), 0x8a, `${label}: a banned client is refused`)

    t.equal(await connackCode(mqttUrl, { clientId: 'u1', username: 'alice', password: 's3cret' }), 0, `${label}: broker_auth_username user`)
    t.equal(await connackCode(mqttUrl, { clientId: 'u2', username: 'bob', password: 'b0b' }), 0x87, `${label}: a deleted user stays deleted`)
    t.equal(await connackCode(mqttUrl, { clientId: 'dev-1', password: 'pw1', username: 'any' }), 0, `${label}: broker_auth_clientid user`)
    t.same(await snapshot(join(root, 'etc')), etc, `${label}: etc/ is as the operator wrote it`)
  }

  // --- kill -9: nothing depends on a clean stop ---
  await stopNode(node, 'SIGKILL')
  node = await startNode(root)
  await t.test('after kill -9 and a start', async (t) => await everythingKept(t, 'kill-9'))

  // --- SIGTERM, then a start whose --set disagrees with a stored override ---
  await stopNode(node, 'SIGTERM')
  node = await startNode(root, ['--set', 'mqtt.allow_anonymous=true'])
  await t.test('a start-time --set wins over a stored override, and the log says so', async (t) => {
    t.equal(await configValue('mqtt.allow_anonymous'), 'true')
    t.equal(await connackCode(mqttUrl, { clientId: 'anon' }), 0)
    const warning = node.lines.map((line) => JSON.parse(line) as Record<string, unknown>).find((entry) => entry.key === 'mqtt.allow_anonymous')
    t.match(warning, { msg: 'runtime override of mqtt.allow_anonymous not applied: --set mqtt.allow_anonymous=true sets it at start', override: 'false', overrideAt: `${join(dataDir, OVERRIDE_FILE)}:4`, inForce: '--set mqtt.allow_anonymous=true' })
    t.equal(await configValue('mqtt.broker.sys_interval'), '7s', 'the other overrides apply')
    t.match(await overrideText(), /^mqtt\.allow_anonymous = false$/m, 'the override is kept')
    t.equal((await http('PUT', '/configs/broker', { key: 'mqtt.allow_anonymous', value: 'true' })).status, 200)
    t.notMatch(await overrideText(), /allow_anonymous/, 'setting the start-time value removes the override')
  })

  // --- a bad override stops the start, naming its file and line ---
  await stopNode(node, 'SIGTERM')
  await writeFile(join(dataDir, OVERRIDE_FILE), HEADER + 'broker.sys_interval = 7s\nlog.console.level = loud\n')
  const failed = await startNode(root).then(async (started) => {
    await stopNode(started, 'SIGKILL')
    return ['it started']
  }, (err: { lines: string[] }) => err.lines)
  t.match(failed, [`broker: ${join(dataDir, OVERRIDE_FILE)}:5: log.console.level: `])
})
