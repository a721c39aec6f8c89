// The schema (defaults, units, errors), the shipped conf file and the §2.15
// description of the request settings.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { INSTALL_ROOT, parseConfigText } from '../../../lib/plugin-kit/testing.js'
import plugin, { describeSettings } from '../index.js'
import { validate } from './load.js'

const AUTH = { 'auth.http.auth_req': 'http://127.0.0.1:8991/mqtt/auth' }
const CONF = join(INSTALL_ROOT, 'etc/plugins/broker_auth_http.conf')

async function shipped (): Promise<Record<string, string>> {
  const lines = parseConfigText(await readFile(CONF, 'utf8'), 'etc/plugins/broker_auth_http.conf')
  return Object.fromEntries(lines.map((l) => [l.key, l.value]))
}

function rejects (t: Test, settings: Record<string, string>, pattern: RegExp): void {
  const { error } = plugin.schema.validate(settings)
  t.match(error?.message, pattern, JSON.stringify(settings))
}

t.test('the plugin names itself', async (t) => {
  t.equal(plugin.name, 'broker_auth_http')
  t.equal(plugin.version, '0.1.0')
  t.type(plugin.description, 'string')
})

t.test('defaults: only auth_req is needed', async (t) => {
  t.strictSame(validate(AUTH), {
    ...AUTH,
    'auth.http.auth_req.method': 'post',
    'auth.http.auth_req.params': 'clientid=%c,username=%u,password=%P',
    'auth.http.super_req.method': 'post',
    'auth.http.super_req.params': 'clientid=%c,username=%u',
    'auth.http.acl_req.method': 'get',
    'auth.http.acl_req.params': 'access=%A,username=%u,clientid=%c,ipaddr=%a,topic=%t',
    'auth.http.request.timeout': 5000,
    'auth.http.request.retry_times': 3,
    'auth.http.request.retry_interval': 100,
    'auth.http.request.retry_backoff': 2,
    'auth.http.pool_size': 8,
    'auth.http.failure': 'deny'
  })
})

t.test('auth.http.failure: deny or ignore (any case), nothing else', async (t) => {
  t.equal(validate({ ...AUTH, 'auth.http.failure': 'Ignore' })['auth.http.failure'], 'ignore')
  t.throws(() => validate({ ...AUTH, 'auth.http.failure': 'allow' }), /auth\.http\.failure/)
})

t.test('durations: 5s, 500ms, 1m and bare seconds', async (t) => {
  const timeout = (value: string): number => validate({ ...AUTH, 'auth.http.request.timeout': value })['auth.http.request.timeout']
  t.equal(timeout('5s'), 5000)
  t.equal(timeout('500ms'), 500)
  t.equal(timeout('1m'), 60000)
  t.equal(timeout('2'), 2000)
  t.equal(validate({ ...AUTH, 'auth.http.request.retry_interval': '0' })['auth.http.request.retry_interval'], 0)
})

t.test('methods are case-insensitive; empty super_req/acl_req mean unset', async (t) => {
  const config = validate({ ...AUTH, 'auth.http.auth_req.method': 'GET', 'auth.http.super_req': '', 'auth.http.acl_req': '' })
  t.equal(config['auth.http.auth_req.method'], 'get')
  t.equal(config['auth.http.super_req'], undefined)
  t.equal(config['auth.http.acl_req'], undefined)
})

t.test('bad values are refused with the key named', async (t) => {
  rejects(t, {}, /auth\.http\.auth_req.*required/)
  rejects(t, { 'auth.http.auth_req': 'ftp://x/auth' }, /auth\.http\.auth_req/)
  rejects(t, { 'auth.http.auth_req': 'not a url' }, /auth\.http\.auth_req/)
  rejects(t, { ...AUTH, 'auth.http.auth_req.method': 'put' }, /auth\.http\.auth_req\.method/)
  rejects(t, { ...AUTH, 'auth.http.auth_req.params': 'clientid=%c,username' }, /auth\.http\.auth_req\.params.*"username" is not a name=value pair/)
  rejects(t, { ...AUTH, 'auth.http.request.timeout': '5x' }, /auth\.http\.request\.timeout.*not a duration/)
  rejects(t, { ...AUTH, 'auth.http.request.timeout': '0' }, /auth\.http\.request\.timeout.*shorter than 1ms/)
  rejects(t, { ...AUTH, 'auth.http.request.retry_times': '-1' }, /retry_times/)
  rejects(t, { ...AUTH, 'auth.http.request.retry_backoff': '0.5' }, /retry_backoff/)
  rejects(t, { ...AUTH, 'auth.http.pool_size': '0' }, /pool_size/)
  rejects(t, { ...AUTH, 'auth.http.auth_req.mehtod': 'get' }, /auth\.http\.auth_req\.mehtod.*not allowed/)
})

t.test('the shipped conf file validates, with the EMQ X URLs and the documented defaults', async (t) => {
  const settings = await shipped()
  const config = validate(settings)
  t.equal(config['auth.http.auth_req'], 'http://127.0.0.1:8991/mqtt/auth')
  t.equal(config['auth.http.super_req'], 'http://127.0.0.1:8991/mqtt/superuser')
  t.equal(config['auth.http.acl_req'], 'http://127.0.0.1:8991/mqtt/acl')
  const defaults = validate(AUTH)
  for (const key of Object.keys(defaults)) {
    if (key === 'auth.http.auth_req') continue
    t.strictSame(config[key as keyof typeof config], defaults[key as keyof typeof defaults], `${key} is set to its default`)
  }
  const text = await readFile(CONF, 'utf8')
  for (const key of Object.keys(settings)) {
    const block = text.slice(0, text.indexOf(`\n${key} =`))
    const doc = block.slice(block.lastIndexOf('\n\n'))
    t.match(doc, /## What it does:[\s\S]*## Value:[\s\S]*## Default:/, `${key} is documented`)
  }
})

t.test('describeSettings: the nine request keys as §2.15 items', async (t) => {
  const items = describeSettings(await shipped())
  t.strictSame(items.map((i) => i.key), [
    'auth.http.auth_req', 'auth.http.auth_req.method', 'auth.http.auth_req.params',
    'auth.http.super_req', 'auth.http.super_req.method', 'auth.http.super_req.params',
    'auth.http.acl_req', 'auth.http.acl_req.method', 'auth.http.acl_req.params'
  ])
  for (const item of items) {
    t.strictSame(Object.keys(item), ['key', 'value', 'desc', 'required'])
    t.ok(item.desc.length > 10, `${item.key} has a description`)
    t.equal(item.required, true, `${item.key} is set in the shipped file`)
  }
  t.equal(items[0].value, 'http://127.0.0.1:8991/mqtt/auth')
  t.equal(items[8].value, 'access=%A,username=%u,clientid=%c,ipaddr=%a,topic=%t')

  const sparse = describeSettings({ ...AUTH, 'auth.http.acl_req.method': 'post', 'auth.http.super_req': '' })
  const byKey = Object.fromEntries(sparse.map((i) => [i.key, i]))
  t.strictSame(byKey['auth.http.auth_req'], { ...byKey['auth.http.auth_req'], value: AUTH['auth.http.auth_req'], required: true })
  t.strictSame([byKey['auth.http.super_req'].value, byKey['auth.http.super_req'].required], ['', false], 'empty: unset')
  t.strictSame([byKey['auth.http.acl_req'].value, byKey['auth.http.acl_req'].required], ['', false])
  t.strictSame([byKey['auth.http.acl_req.method'].value, byKey['auth.http.acl_req.method'].required], ['post', true])
  t.strictSame([byKey['auth.http.acl_req.params'].value, byKey['auth.http.acl_req.params'].required], ['access=%A,username=%u,clientid=%c,ipaddr=%a,topic=%t', false], 'unset: the default')
})
