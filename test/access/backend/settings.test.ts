import t from 'tap'
import Joi from 'joi'
import { commonKeys, commonSettings, parseServer, serverSetting, serverText, switchSetting } from '../../../lib/plugin-kit/backend/settings.js'

const schema = Joi.object({
  ...commonKeys('auth.x'),
  'auth.x.server': serverSetting('127.0.0.1:3306', 3306),
  'auth.x.ssl': switchSetting(false)
})

t.test('defaults: pool 8, 5s, unavailable auth deny and acl ignore', async (t) => {
  const { value, error } = schema.validate({})
  t.equal(error, undefined)
  t.same(commonSettings(value, 'auth.x'), { pool: 8, queryTimeout: 5000, unavailableAuth: 'deny', unavailableAcl: 'ignore' })
  t.same(value['auth.x.server'], { host: '127.0.0.1', port: 3306 })
  t.equal(value['auth.x.ssl'], false)
})

t.test('values are converted and checked', async (t) => {
  const { value, error } = schema.validate({
    'auth.x.pool': '3', 'auth.x.query_timeout': '250ms', 'auth.x.unavailable.auth': 'ignore', 'auth.x.unavailable.acl': 'deny', 'auth.x.server': 'db.local', 'auth.x.ssl': 'on'
  })
  t.equal(error, undefined)
  t.same(commonSettings(value, 'auth.x'), { pool: 3, queryTimeout: 250, unavailableAuth: 'ignore', unavailableAcl: 'deny' })
  t.same(value['auth.x.server'], { host: 'db.local', port: 3306 })
  t.equal(value['auth.x.ssl'], true)
  t.ok(schema.validate({ 'auth.x.pool': 0 }).error)
  t.ok(schema.validate({ 'auth.x.query_timeout': 'soon' }).error)
  t.ok(schema.validate({ 'auth.x.unavailable.auth': 'allow' }).error)
  t.ok(schema.validate({ 'auth.x.unavailable.acl': 'allow' }).error)
  t.ok(schema.validate({ 'auth.x.server': 'host:99999' }).error)
})

t.test('parseServer and serverText', async (t) => {
  t.same(parseServer('h:1', 2), { host: 'h', port: 1 })
  t.same(parseServer('[::1]:5432', 2), { host: '::1', port: 5432 })
  t.same(parseServer('::1', 2), { host: '::1', port: 2 })
  t.equal(serverText({ host: '::1', port: 5 }), '[::1]:5')
  t.equal(serverText({ host: 'h', port: 5 }), 'h:5')
  t.throws(() => parseServer('a b:1', 2))
  t.throws(() => parseServer('h:x', 2))
})
