// broker_ctl commands that plugins add (users, clientid, mgmt, admins) and
// the plugins commands, against a real node process; the effects are checked
// with real MQTT clients and the management API.
import t from 'tap'
import { spawnCtlNode } from './helpers/ctl.js'
import { closeAll, connect } from './helpers/mqtt.js'

// dozens of broker_ctl runs (a Node.js process each) against one node: it ran out of tap's 120 s beside 5
// other test files (load 20 and more), so the limit is generous
t.setTimeout(480_000)

async function connackCode (url: string, options: Parameters<typeof connect>[1]): Promise<number> {
  try {
    await closeAll(await connect(url, { protocolVersion: 5, ...options }))
    return 0
  } catch (err) {
    return (err as { code?: number }).code ?? -1
  }
}

t.test('plugin commands', async (t) => {
  const node = await spawnCtlNode({ broker_management: {}, broker_auth_username: {}, broker_auth_clientid: {} }, { 'mqtt.allow_anonymous': 'false' })
  t.teardown(node.stop)
  const http = async (method: string, path: string, auth: string, body?: unknown): Promise<{ status: number, body: unknown }> => {
    const res = await fetch(`${node.api}/api/v3${path}`, {
      method,
      headers: { authorization: `Basic ${Buffer.from(auth).toString('base64')}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body)
    })
    const text = await res.text()
    return { status: res.status, body: text === '' ? undefined : JSON.parse(text) }
  }

  t.test('users add, update, del, list (broker_auth_username)', async (t) => {
    const add = await node.run('users', 'add', 'alice', 's3cret')
    t.equal(add.code, 0)
    t.equal(add.stdout, 'ok\n')
    t.equal(await connackCode(node.mqttUrl, { clientId: 'u1', username: 'alice', password: 's3cret' }), 0, 'the new user connects')
    t.equal(await connackCode(node.mqttUrl, { clientId: 'u1', username: 'alice', password: 'wrong' }), 0x86, 'a wrong password is refused')
    t.equal((await node.run('users', 'update', 'alice', 'n3w')).code, 0)
    t.equal(await connackCode(node.mqttUrl, { clientId: 'u1', username: 'alice', password: 's3cret' }), 0x86, 'the old password no longer works')
    t.equal(await connackCode(node.mqttUrl, { clientId: 'u1', username: 'alice', password: 'n3w' }), 0)
    t.same((await node.json('users', 'list')).data, ['alice'])
    t.equal((await node.run('users', 'list')).stdout, 'alice\n')
    const again = await node.run('users', 'add', 'alice', 'x')
    t.equal(again.code, 1)
    t.match(again.stderr, 'Error: user "alice" already exists')
    t.equal((await node.run('users', 'add', 'bob', '')).code, 2, 'an empty password is a bad argument')
    t.equal((await node.run('users', 'del', 'alice')).code, 0)
    t.equal(await connackCode(node.mqttUrl, { clientId: 'u1', username: 'alice', password: 'n3w' }), 0x87, 'gone: no plugin allows it and anonymous access is off')
    t.equal((await node.run('users', 'del', 'alice')).code, 1)
    t.equal((await node.run('users', 'rename', 'alice')).code, 2)
  })

  t.test('clientid add, update, del, list (broker_auth_clientid)', async (t) => {
    t.equal((await node.run('clientid', 'add', 'dev-1', 'pw1')).code, 0)
    t.equal(await connackCode(node.mqttUrl, { clientId: 'dev-1', password: 'pw1', username: 'any' }), 0)
    t.equal((await node.run('clientid', 'update', 'dev-1', 'pw2')).code, 0)
    t.equal(await connackCode(node.mqttUrl, { clientId: 'dev-1', password: 'pw1', username: 'any' }), 0x86)
    t.same((await node.json('clientid', 'list')).data, ['dev-1'])
    t.equal((await node.run('clientid', 'del', 'dev-1')).code, 0)
    t.equal((await node.run('clientid', 'update', 'dev-1', 'x')).code, 1, 'no such client id')
  })

  t.test('mgmt insert, lookup, update, list, delete: applications of the v3 API', async (t) => {
    const insert = await node.run('mgmt', 'insert', 'app-1', 'App One')
    t.equal(insert.code, 0)
    const secret = /^AppSecret: (\S+)\n$/.exec(insert.stdout)?.[1]
    t.ok(secret, 'the secret is printed')
    t.equal((await http('GET', '/brokers/', `app-1:${secret}`)).status, 200, 'the app authenticates the v3 API')
    t.match((await node.run('mgmt', 'lookup', 'app-1')).stdout, 'app_id: app-1\nname: App One\n', 'only its hash is kept: the secret is shown at creation only')
    t.match((await node.run('mgmt', 'list')).stdout, /^app_id: app-1, name: App One, desc: , status: true, expired: undefined$/m)
    t.equal((await node.run('mgmt', 'update', 'app-1', 'false')).stdout, 'update successfully.\n')
    t.equal((await http('GET', '/brokers/', `app-1:${secret}`)).status, 401, 'a disabled app is refused')
    t.equal((await node.run('mgmt', 'update', 'app-1', 'maybe')).code, 2)
    t.equal((await node.run('mgmt', 'insert', 'app-1', 'Again')).code, 1, 'already existed')
    t.equal((await node.run('mgmt', 'delete', 'app-1')).code, 0)
    t.equal((await node.run('mgmt', 'delete', 'app-1')).code, 1)
    t.equal((await node.run('mgmt', 'lookup', 'app-1')).code, 1)
  })

  t.test('admins add, passwd, del: administrator users', async (t) => {
    t.equal((await node.run('admins', 'add', 'ops', 'pw-1', 'administrator')).code, 0)
    t.equal((await http('POST', '/auth', 'admin:public', { username: 'ops', password: 'pw-1' })).status, 200)
    t.equal((await node.run('admins', 'passwd', 'ops', 'pw-2')).code, 0)
    t.equal((await http('POST', '/auth', 'admin:public', { username: 'ops', password: 'pw-1' })).status, 400, 'the old password is wrong now')
    t.equal((await http('POST', '/auth', 'admin:public', { username: 'ops', password: 'pw-2' })).status, 200)
    t.equal((await node.run('admins', 'add', 'ops', 'x')).code, 1, 'exists')
    t.equal((await node.run('admins', 'del', 'ops')).code, 0)
    const keep = await node.run('admins', 'del', 'admin')
    t.equal(keep.code, 1)
    t.match(keep.stderr, 'cannot be deleted')
    t.equal((await node.run('admins', 'passwd', 'nobody', 'x')).code, 1)
  })

  t.test('plugins list, unload, load, reload; a plugin\'s commands come and go with it', async (t) => {
    const list = await node.run('plugins', 'list')
    t.match(list.stdout, /^Plugin\(broker_auth_clientid, version=\S+, description=Authentication with ClientId\/Password, active=true\)$/m)
    t.match(list.stdout, /^Plugin\(broker_plugin_template, version=\S+, description=.*, active=false\)$/m)
    const unload = await node.run('plugins', 'unload', 'broker_auth_clientid')
    t.equal(unload.stdout, 'Plugin broker_auth_clientid unloaded successfully.\n')
    t.equal((await node.run('clientid', 'list')).code, 2, 'its command is gone')
    const twice = await node.run('plugins', 'unload', 'broker_auth_clientid')
    t.equal(twice.code, 1)
    t.equal(twice.stderr, 'unload plugin error: not_started\n')
    t.equal((await node.run('plugins', 'load', 'broker_auth_clientid')).stdout, 'Plugin broker_auth_clientid loaded successfully.\n')
    t.equal((await node.run('clientid', 'list')).code, 0, 'its command is back')
    const again = await node.run('plugins', 'load', 'broker_auth_clientid')
    t.equal(again.code, 1)
    t.equal(again.stderr, 'load plugin error: already_started\n')
    t.equal((await node.run('plugins', 'reload', 'broker_auth_username')).stdout, 'Plugin broker_auth_username reloaded successfully.\n')
    t.match((await node.json<Array<{ name: string, active: boolean }>>('plugins', 'list')).data, [{ name: 'broker_auth_clientid', active: true }])
    const missing = await node.run('plugins', 'load', 'broker_nope')
    t.equal(missing.code, 1)
    t.match(missing.stderr, 'load plugin error: not_found')
  })

  t.test('help lists the commands the loaded plugins add', async (t) => {
    const help = await node.run('--help')
    t.match(help.stdout, /^users add <Username> <Password> +# Add a user$/m)
    t.match(help.stdout, /^clientid add <ClientId> <Password> +# Add a client id$/m)
    t.match(help.stdout, /^mgmt insert <AppId> <Name> +# /m)
    t.match(help.stdout, /^admins add <Username> <Password> \[<Tags>\] +# /m)
    t.match((await node.run('users', '--help')).stdout, /^users list +# List users\n/m)
  })
})
