// GET/PUT /nodes/:node/plugin_configs/:plugin (SPEC §2.15): the values in force read, PUT validated and
// written atomically to data/plugins/<plugin>.conf (etc/plugins/<plugin>.conf untouched), reload seen by real MQTT clients.
import { readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { closeAll, connect, nextMessages } from '../../../test/helpers/mqtt.js'
import { startApiNode } from './api.js'

const api = await startApiNode({}, {}, ['tcp'], { broker_plugin_template: { 'template.greeting_topic': 'greetings' } })
t.teardown(async () => await api.stop())
const node = api.broker.node.name
const confFile = join(api.broker.dataDir, 'etc', 'broker_plugin_template.conf')
const overrideFile = join(api.broker.dataDir, 'plugins', 'broker_plugin_template.conf')
const HEADER = '# Settings of broker_plugin_template changed at run time (management API), written by the broker.\n' +
  '# They apply over etc/plugins/broker_plugin_template.conf, which is left as the operator wrote it.\n'
const readOrNone = async (file: string): Promise<string | undefined> => await readFile(file, 'utf8').catch(() => undefined)
const path = `/nodes/${node}/plugin_configs/broker_plugin_template`

async function greetingTo (filter: string, clientId: string): Promise<string> {
  const watcher = await connect(api.mqttUrl, { clientId: `watch-${clientId}` })
  try {
    await watcher.subscribeAsync(filter)
    const got = nextMessages(watcher, 1)
    const greeted = await connect(api.mqttUrl, { clientId })
    await closeAll(greeted)
    return (await got)[0].topic
  } finally {
    await closeAll(watcher)
  }
}

t.test('GET: the keys of the conf file (required), or the module\'s describeSettings', async (t) => {
  t.same((await api.call('GET', path)).body, [{ key: 'template.greeting_topic', value: 'greetings', desc: '', required: true, datatype: 'string' }])
  const http = (await api.call('GET', `/nodes/${node}/plugin_configs/broker_auth_http`)).body as Array<Record<string, unknown>>
  t.ok(http.length >= 9)
  t.match(http.find((i) => i.key === 'auth.http.auth_req'), { key: 'auth.http.auth_req', value: String, desc: /authentication/, required: false })
  // §2.15's four fields, and (v3) the key's type from the plugin's schema; an enum with its values
  for (const item of http) t.same(Object.keys(item).filter((k) => k !== 'values').sort(), ['datatype', 'desc', 'key', 'required', 'value'])
  t.match(http.find((i) => i.key === 'auth.http.auth_req.method'), { datatype: 'enum', values: ['get', 'post'] })
  t.match(await api.call('GET', `/nodes/${node}/plugin_configs/broker_nothing`), { status: 404 })
  t.match(await api.call('GET', '/nodes/other@host/plugin_configs/broker_plugin_template'), { status: 404 })
})

t.test('PUT: a bad value is refused (108) and no file is written', async (t) => {
  const before = await readFile(confFile, 'utf8')
  t.match(await api.call('PUT', path, { body: { 'template.greeting_topic': 'bad/+' } }), { status: 400, body: { code: 108 } })
  t.match(await api.call('PUT', path, { body: { 'template.no_such_key': 'x' } }), { status: 400, body: { code: 108 } })
  t.match(await api.call('PUT', path, { body: { 'template.greeting_topic': 5 } }), { status: 400, body: { code: 108 } })
  t.equal(await readFile(confFile, 'utf8'), before)
  t.equal(await readOrNone(overrideFile), undefined)
  t.equal(await greetingTo('greetings/+', 'still-old'), 'greetings/still-old')
})

t.test('PUT: the value goes to data/plugins/, etc/ keeps what the operator wrote, the plugin reloads with it', async (t) => {
  const operator = '## the greeting prefix\ntemplate.greeting_topic = greetings\n# end\n'
  await writeFile(confFile, operator)
  const res = await api.call('PUT', path, { body: { 'template.greeting_topic': 'hello/there' } })
  t.equal(res.status, 200)
  t.equal(res.body, 'ok')
  t.equal(await readFile(confFile, 'utf8'), operator)
  t.equal(await readFile(overrideFile, 'utf8'), HEADER + 'template.greeting_topic = hello/there\n')
  t.same((await api.call('GET', path)).body, [{ key: 'template.greeting_topic', value: 'hello/there', desc: '', required: true, datatype: 'string' }])
  t.equal(await greetingTo('hello/there/+', 'newcomer'), 'hello/there/newcomer')
  const plugins = (await api.call('GET', `/nodes/${node}/plugins/`)).body as Array<{ name: string, active: boolean }>
  t.equal(plugins.find((p) => p.name === 'broker_plugin_template')?.active, true)

  t.equal((await api.call('PUT', path, { body: { 'template.greeting_topic': 'greetings' } })).body, 'ok')
  t.equal(await readOrNone(overrideFile), undefined, 'setting the operator\'s value back removes the override')
  t.equal(await greetingTo('greetings/+', 'back'), 'greetings/back')
})

t.test('PUT: a key missing from etc/ is set in data/plugins/; GET shows it', async (t) => {
  await writeFile(confFile, '# nothing set\n')
  t.equal((await api.call('PUT', path, { body: { 'template.greeting_topic': 'added' } })).body, 'ok')
  t.equal(await readFile(confFile, 'utf8'), '# nothing set\n')
  t.equal(await readFile(overrideFile, 'utf8'), HEADER + 'template.greeting_topic = added\n')
  t.same((await api.call('GET', path)).body, [{ key: 'template.greeting_topic', value: 'added', desc: '', required: true, datatype: 'string' }])
  t.equal(await greetingTo('added/+', 'appended'), 'added/appended')
  await rm(overrideFile)
})

t.test('a bad line in data/plugins/ is named by its file and line; the running plugin stays as it was', async (t) => {
  await writeFile(confFile, 'template.greeting_topic = greetings\n')
  await writeFile(overrideFile, '# by hand\ntemplate.greeting_topic = bad/#\n')
  await t.rejects(api.broker.node.plugins.reload('broker_plugin_template'), { message: new RegExp(`^${overrideFile}:2: template\\.greeting_topic`) })
  t.match(await api.call('PUT', path, { body: { 'template.greeting_topic': 'fine' } }), { status: 200 }, 'a PUT replaces the bad line')
  t.equal(await readFile(overrideFile, 'utf8'), '# by hand\ntemplate.greeting_topic = fine\n')
  t.equal(await greetingTo('fine/+', 'mended'), 'fine/mended')
  await rm(overrideFile)
  await api.broker.node.plugins.reload('broker_plugin_template')
})

t.test('PUT: values a conf line must quote round-trip; values it cannot hold are refused', async (t) => {
  await writeFile(confFile, 'template.greeting_topic = greetings\n')
  t.equal((await api.call('PUT', path, { body: { 'template.greeting_topic': ' spaced out ' } })).body, 'ok')
  t.equal(await readFile(overrideFile, 'utf8'), HEADER + 'template.greeting_topic = " spaced out "\n')
  t.same((await api.call('GET', path)).body, [{ key: 'template.greeting_topic', value: ' spaced out ', desc: '', required: true, datatype: 'string' }])
  t.match(await api.call('PUT', path, { body: { 'template.greeting_topic': 'line\nbreak' } }), { status: 400, body: { code: 108 } })
  t.match(await api.call('PUT', path, { body: { 'bad key': 'x' } }), { status: 400, body: { code: 108 } })
  t.equal(await readFile(overrideFile, 'utf8'), HEADER + 'template.greeting_topic = " spaced out "\n')
  t.equal(await readFile(confFile, 'utf8'), 'template.greeting_topic = greetings\n')
})

t.test('PUT on broker_management itself: answered, then the API comes back with the new setting', async (t) => {
  const own = `/nodes/${node}/plugin_configs/broker_management`
  const res = await api.call('PUT', own, { body: { 'management.max_row_limit': '2' } })
  t.equal(res.status, 200)
  t.equal(res.body, 'ok')
  t.match(await readFile(join(api.broker.dataDir, 'plugins', 'broker_management.conf'), 'utf8'), /^management\.max_row_limit = 2$/m)
  t.notMatch(await readFile(join(api.broker.dataDir, 'etc', 'broker_management.conf'), 'utf8'), /max_row_limit/)
  const deadline = Date.now() + 10_000
  let limit: number | undefined
  while (Date.now() < deadline) {
    try {
      limit = ((await api.call('GET', '/banned/')).body as { meta?: { limit: number } }).meta?.limit
      if (limit === 2) break
    } catch {
      // the server is restarting
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  t.equal(limit, 2, 'the reloaded API pages by the new limit')
})
