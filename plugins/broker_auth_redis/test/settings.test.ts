// The schema: EMQ X defaults, the shipped conf file, sentinel, bad values;
// and how a command setting becomes arguments.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { INSTALL_ROOT, parseConfigText } from '../../../lib/plugin-kit/testing.js'
import { commandArgs, parseCommand } from '../command.js'
import { aclRulesOf, storedUserOf } from '../queries.js'
import plugin from '../index.js'

const validate = (settings: Record<string, string>) => plugin.schema.validate(settings)

t.test('defaults are EMQ X 3.x\'s; the shipped file validates to the same', async (t) => {
  const { value, error } = validate({})
  t.error(error)
  t.match(value, {
    'auth.redis.type': 'single',
    'auth.redis.server': [{ host: '127.0.0.1', port: 6379 }],
    'auth.redis.pool': 8,
    'auth.redis.database': 0,
    'auth.redis.auth_cmd': { text: 'HMGET mqtt_user:%u password' },
    'auth.redis.password_hash': 'plain',
    'auth.redis.super_cmd': { text: 'HGET mqtt_user:%u is_superuser' },
    'auth.redis.acl_cmd': { text: 'HGETALL mqtt_acl:%u' },
    'auth.redis.query_timeout': 5000,
    'auth.redis.unavailable.auth': 'deny',
    'auth.redis.unavailable.acl': 'ignore'
  })
  t.equal(value?.['auth.redis.password'], undefined)
  const lines = parseConfigText(await readFile(join(INSTALL_ROOT, 'etc/plugins/broker_auth_redis.conf'), 'utf8'), 'broker_auth_redis.conf')
  const shipped = validate(Object.fromEntries(lines.map((l) => [l.key, l.value])))
  t.error(shipped.error)
  t.strictSame(shipped.value, value)
})

t.test('sentinel: servers are the sentinels (port 26379 by default); the name implies the type', async (t) => {
  const { value, error } = validate({ 'auth.redis.server': '10.0.0.1, 10.0.0.2:5000', 'auth.redis.sentinel': 'mymaster' })
  t.error(error)
  t.equal(value?.['auth.redis.type'], 'sentinel')
  t.strictSame(value?.['auth.redis.server'], [{ host: '10.0.0.1', port: 26379 }, { host: '10.0.0.2', port: 5000 }])
  t.match(validate({ 'auth.redis.type': 'sentinel' }).error?.message, /master name/)
})

t.test('empty super_cmd / acl_cmd turn them off; bad values are errors', async (t) => {
  const { value } = validate({ 'auth.redis.super_cmd': '', 'auth.redis.acl_cmd': '' })
  t.equal(value?.['auth.redis.super_cmd'], null)
  t.equal(value?.['auth.redis.acl_cmd'], null)
  t.match(validate({ 'auth.redis.password_hash': 'sha3' }).error?.message, /password hash/)
  t.match(validate({ 'auth.redis.server': 'a:1,b:2' }).error?.message, /one server/)
  t.match(validate({ 'auth.redis.server': 'host:99999' }).error?.message, /port/)
  t.match(validate({ 'auth.redis.auth_cmd': '' }).error?.message, /empty/)
  t.match(validate({ 'auth.redis.pool': '0' }).error?.message, /pool/)
})

t.test('a command: words split on spaces, placeholders filled inside their word', async (t) => {
  const cmd = parseCommand('HMGET  mqtt_user:%u password salt')
  const values = { username: 'a b\r\nFLUSHALL', clientId: 'c', ipAddress: '1.2.3.4' }
  t.strictSame(commandArgs(cmd, values), ['mqtt_user:a b\r\nFLUSHALL', 'password', 'salt'])
  t.equal(commandArgs(cmd, { clientId: 'c', ipAddress: '1.2.3.4' }), undefined, 'no username: no lookup')
  t.strictSame(commandArgs(parseCommand('GET u:%c:%a'), values), ['u:c:1.2.3.4'])
})

t.test('replies: HMGET/HGET as a stored user, HGETALL as rules', async (t) => {
  t.strictSame(storedUserOf(['pw', 'salt']), { password: 'pw', salt: 'salt' })
  t.strictSame(storedUserOf(['pw', null]), { password: 'pw' })
  t.strictSame(storedUserOf('pw'), { password: 'pw' })
  t.equal(storedUserOf([null]), undefined)
  t.equal(storedUserOf(null), undefined)
  t.strictSame(aclRulesOf(['a/#', '1', 'b', '9', 'c', '3']), [
    { allow: true, access: 1, topic: 'a/#', username: '$all' },
    { allow: true, access: 3, topic: 'c', username: '$all' }
  ])
  t.strictSame(aclRulesOf({ 'x/y': '2' }), [{ allow: true, access: 2, topic: 'x/y', username: '$all' }])
  t.strictSame(aclRulesOf([]), [])
})
