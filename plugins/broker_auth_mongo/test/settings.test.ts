// The schema (EMQ X 3.x defaults, errors), the shipped conf file, selectors
// and how auth.mongo.type becomes the driver's options.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { INSTALL_ROOT, parseConfigText } from '../../../lib/plugin-kit/testing.js'
import { fillTopic } from '../acl.js'
import { clientOptions } from '../connection.js'
import plugin, { type AuthMongoConfig } from '../index.js'
import { anySelectorFilter, parseSelector, selectorFilter } from '../selector.js'
import { aclSelectors } from '../settings.js'

const CONF = join(INSTALL_ROOT, 'etc/plugins/broker_auth_mongo.conf')

function validate (settings: Record<string, string>): AuthMongoConfig {
  const { value, error } = plugin.schema.validate(settings)
  if (error) throw error
  return value
}

function rejects (t: Test, settings: Record<string, string>, pattern: RegExp): void {
  const { error } = plugin.schema.validate(settings)
  t.match(error?.message, pattern, JSON.stringify(settings))
}

t.test('defaults are EMQ X 3.x emqx_auth_mongo\'s', async (t) => {
  const config = validate({})
  t.strictSame(config['auth.mongo.server'], [{ host: '127.0.0.1', port: 27017 }])
  t.match(config, {
    'auth.mongo.type': 'single',
    'auth.mongo.pool': 8,
    'auth.mongo.auth_source': 'mqtt',
    'auth.mongo.database': 'mqtt',
    'auth.mongo.query_timeout': 5000,
    'auth.mongo.unavailable.auth': 'deny',
    'auth.mongo.unavailable.acl': 'ignore',
    'auth.mongo.auth_query.collection': 'mqtt_user',
    'auth.mongo.auth_query.password_hash': 'sha256',
    'auth.mongo.super_query': true,
    'auth.mongo.super_query.collection': 'mqtt_user',
    'auth.mongo.super_query.super_field': 'is_superuser',
    'auth.mongo.acl_query': true,
    'auth.mongo.acl_query.collection': 'mqtt_acl'
  })
  t.strictSame(config['auth.mongo.auth_query.password_field'], ['password'])
  t.strictSame(config['auth.mongo.auth_query.selector'], parseSelector('username=%u'))
  t.strictSame(config['auth.mongo.super_query.selector'], parseSelector('username=%u'))
  t.strictSame(aclSelectors(config), [parseSelector('username=%u')])
  t.equal(config['auth.mongo.login'], undefined)
})

t.test('the shipped conf file validates and sets the defaults', async (t) => {
  const lines = parseConfigText(await readFile(CONF, 'utf8'), 'etc/plugins/broker_auth_mongo.conf')
  const shipped = validate(Object.fromEntries(lines.map((l) => [l.key, l.value])))
  const { 'auth.mongo.acl_query.selector': aclSelector, ...rest } = shipped
  t.strictSame(rest, validate({}), 'every other key at its default')
  t.strictSame(aclSelectors(shipped), aclSelectors(validate({})), 'the ACL selector is the default one')
  t.ok(aclSelector, 'the ACL selector is written out')
  const text = await readFile(CONF, 'utf8')
  for (const key of Object.keys(plugin.schema.describe().keys ?? {})) {
    t.match(text, new RegExp(`^(## )?${key.replace(/\./g, '\\.')} =`, 'm'), `${key} is documented`)
  }
})

t.test('bad settings are refused with the reason', async (t) => {
  rejects(t, { 'auth.mongo.type': 'cluster' }, /auth\.mongo\.type/)
  rejects(t, { 'auth.mongo.type': 'rs' }, /rs needs auth\.mongo\.rs_set_name/)
  rejects(t, { 'auth.mongo.server': 'a:1,b:2' }, /single takes one/)
  rejects(t, { 'auth.mongo.server': 'a:99999' }, /no valid port/)
  rejects(t, { 'auth.mongo.pool': '0' }, /auth\.mongo\.pool/)
  rejects(t, { 'auth.mongo.query_timeout': 'soon' }, /query_timeout/)
  rejects(t, { 'auth.mongo.unavailable.auth': 'allow' }, /unavailable\.auth/)
  rejects(t, { 'auth.mongo.auth_query.password_hash': 'rot13' }, /password_hash/)
  rejects(t, { 'auth.mongo.auth_query.password_hash': 'salt,sha256' }, /needs a salt field/)
  rejects(t, { 'auth.mongo.auth_query.password_field': 'a,b,c' }, /password,salt/)
  rejects(t, { 'auth.mongo.auth_query.selector': 'username' }, /not field=value/)
  rejects(t, { 'auth.mongo.auth_query.selector': '$where=%u' }, /not a field name/)
  rejects(t, { 'auth.mongo.auth_query.selector': 'a=%u,a=%c' }, /given twice/)
  rejects(t, { 'auth.mongo.acl_query.selector.x': 'a=%u' }, /not allowed/)
  rejects(t, { 'auth.mongo.database': '$db' }, /auth\.mongo\.database/)
  rejects(t, { 'auth.mongo.ssl': 'true' }, /not allowed/)
})

t.test('selectors: the client\'s values are whole strings; a missing value matches nothing', async (t) => {
  const values = { username: 'x, username=admin', clientId: 'c{"$ne":1}', ipAddress: '10.0.0.1' }
  t.strictSame(selectorFilter(parseSelector('username=%u, clientid=%c'), values), { username: 'x, username=admin', clientid: 'c{"$ne":1}' })
  t.strictSame(selectorFilter(parseSelector('topic=dev/%c/in,ip=%a'), values), { topic: 'dev/c{"$ne":1}/in', ip: '10.0.0.1' })
  t.strictSame(selectorFilter(parseSelector('username=$all'), values), { username: '$all' }, 'literal values')
  t.equal(selectorFilter(parseSelector('username=%u'), { clientId: 'c', ipAddress: '1.2.3.4' }), undefined, 'no user name')
  const acl = [parseSelector('username=%u'), parseSelector('username=$all')]
  t.strictSame(anySelectorFilter(acl, values), { $or: [{ username: 'x, username=admin' }, { username: '$all' }] })
  t.strictSame(anySelectorFilter(acl, { clientId: 'c', ipAddress: '1.2.3.4' }), { username: '$all' }, 'a selector that cannot match is left out')
  t.equal(anySelectorFilter([parseSelector('username=%u')], { clientId: 'c', ipAddress: '1.2.3.4' }), undefined)
})

t.test('numbered ACL selectors come in number order after the plain one', async (t) => {
  const numbered = validate({ 'auth.mongo.acl_query.selector.10': 'c=%c', 'auth.mongo.acl_query.selector.2': 'username=$all', 'auth.mongo.acl_query.selector.1': 'username=%u' })
  t.strictSame(aclSelectors(numbered), ['username=%u', 'username=$all', 'c=%c'].map(parseSelector))
  const both = validate({ 'auth.mongo.acl_query.selector': 'a=%u', 'auth.mongo.acl_query.selector.1': 'b=%c' })
  t.strictSame(aclSelectors(both), ['a=%u', 'b=%c'].map(parseSelector))
})

t.test('%u and %c inside a topic level are filled in only when safe', async (t) => {
  const values = { username: 'ann', clientId: 'c-1', ipAddress: '::1' }
  t.equal(fillTopic('users/%u/#', values), 'users/%u/#', 'a whole level stays for the matcher')
  t.equal(fillTopic('dev-%c/x-%u', values), 'dev-c-1/x-ann')
  t.equal(fillTopic('dev-%u/x', { ...values, username: 'a+b' }), undefined, 'a wildcard in the value drops the topic')
  t.equal(fillTopic('dev-%u/x', { ...values, username: 'a/b' }), undefined, 'a level separator in the value drops the topic')
  t.equal(fillTopic('dev-%u/x', { clientId: 'c', ipAddress: '::1' }), undefined, 'no user name')
})

t.test('auth.mongo.type → the driver\'s topology options', async (t) => {
  const single = clientOptions(validate({ 'auth.mongo.server': 'db1:27018', 'auth.mongo.pool': '3', 'auth.mongo.query_timeout': '2s' }))
  t.match(single, { directConnection: true, maxPoolSize: 3, serverSelectionTimeoutMS: 1600, connectTimeoutMS: 1600 }, 'the driver gives up (with its reason) before the 2 s of the guard')
  t.equal(single.replicaSet, undefined)
  t.equal(single.auth, undefined, 'no login: no credentials')
  const rs = clientOptions(validate({ 'auth.mongo.type': 'rs', 'auth.mongo.rs_set_name': 'rs0', 'auth.mongo.server': 'a,b:27018' }))
  t.match(rs, { directConnection: false, replicaSet: 'rs0' })
  for (const type of ['sharded', 'unknown']) {
    const options = clientOptions(validate({ 'auth.mongo.type': type, 'auth.mongo.server': 'a,b' }))
    t.match(options, { directConnection: false }, type)
    t.equal(options.replicaSet, undefined, type)
  }
  const login = clientOptions(validate({ 'auth.mongo.login': 'broker', 'auth.mongo.password': 'p w', 'auth.mongo.auth_source': 'admin' }))
  t.strictSame(login.auth, { username: 'broker', password: 'p w' })
  t.equal(login.authSource, 'admin')
})
