import t from 'tap'
import { fillTemplate, parseTemplate, placeholderValue, sqlWithParameters, valuesOf } from '../../../lib/plugin-kit/backend/placeholders.js'
import { clientInfo } from '../../../lib/plugin-kit/fake-context.js'

const values = { username: 'alice', clientId: 'c1', ipAddress: '10.0.0.1', password: 'pw', certCommonName: 'cn1', certSubject: 'CN=cn1' }

t.test('parseTemplate splits placeholders; unknown %x and a lone % stay literal', async (t) => {
  t.same(parseTemplate('mqtt_user:%u'), [{ literal: 'mqtt_user:' }, { placeholder: '%u' }])
  t.same(parseTemplate('%c%a/%x/%'), [{ placeholder: '%c' }, { placeholder: '%a' }, { literal: '/%x/%' }])
  t.same(parseTemplate('%P %C %d'), [{ placeholder: '%P' }, { literal: ' ' }, { placeholder: '%C' }, { literal: ' ' }, { placeholder: '%d' }])
  t.same(parseTemplate(''), [])
})

t.test('placeholderValue and fillTemplate; an absent value is undefined', async (t) => {
  t.equal(placeholderValue('%u', values), 'alice')
  t.equal(placeholderValue('%c', values), 'c1')
  t.equal(placeholderValue('%a', values), '10.0.0.1')
  t.equal(placeholderValue('%P', values), 'pw')
  t.equal(placeholderValue('%C', values), 'cn1')
  t.equal(placeholderValue('%d', values), 'CN=cn1')
  t.equal(placeholderValue('%u', { clientId: 'c', ipAddress: 'a' }), undefined)
  t.equal(fillTemplate('mqtt_user:%u', values), 'mqtt_user:alice')
  t.equal(fillTemplate('mqtt_user:%u', { clientId: 'c', ipAddress: 'a' }), undefined)
})

t.test('valuesOf reads the client, the password and the certificate subject', async (t) => {
  t.same(valuesOf(clientInfo({ username: 'u', clientId: 'x', ipAddress: '1.2.3.4' }), Buffer.from('secret')),
    { clientId: 'x', ipAddress: '1.2.3.4', username: 'u', password: 'secret' })
  t.same(valuesOf(clientInfo({ clientId: 'x' })), { clientId: 'x', ipAddress: '127.0.0.1' })
  const tls = valuesOf(clientInfo({ peercert: 'C=SE,O=Test,CN=device-7' }))
  t.equal(tls.certSubject, 'C=SE,O=Test,CN=device-7')
  t.equal(tls.certCommonName, 'device-7')
  t.equal(valuesOf(clientInfo({ peercert: 'O=Test' })).certCommonName, undefined)
})

t.test('sqlWithParameters binds quoted and bare placeholders, never pastes them', async (t) => {
  const q = "select password from mqtt_user where username = '%u' limit 1"
  t.same(sqlWithParameters(q, values, () => '?'), { text: 'select password from mqtt_user where username = ? limit 1', params: ['alice'] })
  const acl = "select allow from mqtt_acl where ipaddr = '%a' or username = '%u' or username = '$all' or clientid = '%c'"
  t.same(sqlWithParameters(acl, values, (i) => `$${i}`), {
    text: "select allow from mqtt_acl where ipaddr = $1 or username = $2 or username = '$all' or clientid = $3",
    params: ['10.0.0.1', 'alice', 'c1']
  })
  t.same(sqlWithParameters('select 1 where a = %u and b = %P', values, () => '?'), { text: 'select 1 where a = ? and b = ?', params: ['alice', 'pw'] })
  t.same(sqlWithParameters("select 1 where a = 'x%u' and \"%u\" = 1 and `%c` = 2 and c = 'it''s %c'", values, () => '?'),
    { text: "select 1 where a = 'x%u' and \"%u\" = 1 and `%c` = 2 and c = 'it''s %c'", params: [] })
  t.same(sqlWithParameters("where username = '%u'", { clientId: 'c', ipAddress: 'a' }, () => '?'), { text: 'where username = ?', params: [null] })
  const evil = { ...values, username: "' or '1'='1" }
  t.same(sqlWithParameters(q, evil, () => '?').params, ["' or '1'='1"])
})
