// The settings without a node: the schema's defaults and refusals (the
// dynamic header and rule keys included), the shipped conf file (valid, every
// key documented), the rules' topic tests, EMQ X's base62.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { INSTALL_ROOT, parseConfigText, validatePluginConfig } from '../../../lib/plugin-kit/testing.js'
import plugin from '../index.js'
import { base62, encodePayload } from '../payload.js'
import { EVENTS, eventsOf, parseRule } from '../rules.js'
import { headersOf, parseUrl, rulesOf, type WebHookConfig } from '../settings.js'

const CONF = join(INSTALL_ROOT, 'etc/plugins/broker_web_hook.conf')

function validate (settings: Record<string, string>): WebHookConfig {
  const { value, error } = plugin.schema.validate(settings, { convert: true })
  if (error !== undefined) throw error
  return value
}

const refusal = (settings: Record<string, string>): string | undefined => plugin.schema.validate(settings).error?.message

t.test('the plugin names itself', async (t) => {
  t.equal(plugin.name, 'broker_web_hook')
  t.match(plugin.description, /HTTP/)
})

t.test('defaults', async (t) => {
  t.same(validate({}), {
    'web.hook.api.url': 'http://127.0.0.1:8080/',
    'web.hook.encode_payload': 'none',
    'web.hook.ssl.verify': true,
    'web.hook.pool_size': 32,
    'web.hook.request.pipelining': 256,
    'web.hook.batch_size': 1,
    'web.hook.batch_time': 5,
    'web.hook.queue_size': 10000,
    'web.hook.queue_bytes': 64 * 1024 * 1024,
    'web.hook.request.timeout': 5000,
    'web.hook.request.retry_times': 3,
    'web.hook.request.retry_interval': 500,
    'web.hook.request.retry_backoff': 2
  })
  t.same(rulesOf(validate({})), [], 'no rules: nothing is posted')
})

t.test('values are converted', async (t) => {
  const config = validate({
    'web.hook.api.url': '10.0.0.5:9000/hooks?k=v',
    'web.hook.encode_payload': 'BASE64',
    'web.hook.queue_bytes': '512KB',
    'web.hook.request.timeout': '2s',
    'web.hook.request.retry_interval': '0',
    'web.hook.ssl.verify': 'false',
    'web.hook.headers.X-Api-Key': 'k1',
    'web.hook.headers.content-type': 'application/json; charset=utf-8',
    'web.hook.rule.message.publish.1': '{"action": "on_message_publish", "topic": "a/#"}',
    'web.hook.rule.message.publish.extra': '{"action": "on_message_publish", "topic": "b/+"}',
    'web.hook.rule.client.connected.1': '{"action":"on_client_connected"}'
  })
  t.equal(config['web.hook.api.url'], 'http://10.0.0.5:9000/hooks?k=v', 'a URL without a scheme is http://')
  t.equal(config['web.hook.encode_payload'], 'base64')
  t.equal(config['web.hook.queue_bytes'], 512 * 1024)
  t.equal(config['web.hook.request.timeout'], 2000)
  t.equal(config['web.hook.request.retry_interval'], 0)
  t.equal(config['web.hook.ssl.verify'], false)
  t.same(headersOf(config), { 'X-Api-Key': 'k1', 'content-type': 'application/json; charset=utf-8' })
  t.same(rulesOf(config), [
    { event: 'client.connected', action: 'on_client_connected' },
    { event: 'message.publish', action: 'on_message_publish', topic: 'a/#' },
    { event: 'message.publish', action: 'on_message_publish', topic: 'b/+' }
  ])
  t.equal(validate({ 'web.hook.encode_payload': '' })['web.hook.encode_payload'], 'none', 'empty: none')
})

t.test('bad values are refused, each with the reason', async (t) => {
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ 'web.hook.api.url': 'ftp://host/x' }, /not an http:\/\/ or https:\/\/ URL/],
    [{ 'web.hook.api.url': 'http://user:pw@host/' }, /may not hold credentials/],
    [{ 'web.hook.api.url': 'http://host/#frag' }, /#fragment/],
    [{ 'web.hook.api.url': 'http://[::1' }, /is not a URL/],
    [{ 'web.hook.encode_payload': 'base32' }, /must be one of/],
    [{ 'web.hook.pool_size': '0' }, /greater than or equal to 1/],
    [{ 'web.hook.request.pipelining': '0' }, /greater than or equal to 1/],
    [{ 'web.hook.request.pipelining': 'yes' }, /must be a number/],
    [{ 'web.hook.batch_size': '0' }, /greater than or equal to 1/],
    [{ 'web.hook.batch_size': '10001' }, /less than or equal to 10000/],
    [{ 'web.hook.batch_time': '0ms' }, /shorter than 1ms/],
    [{ 'web.hook.batch_time': '11s' }, /longer than 10s/],
    [{ 'web.hook.queue_size': 'many' }, /must be a number/],
    [{ 'web.hook.queue_bytes': '100' }, /less than 1KB/],
    [{ 'web.hook.queue_bytes': 'lots' }, /is not a size/],
    [{ 'web.hook.queue_bytes': '2GB' }, /more than 1GB/],
    [{ 'web.hook.request.timeout': '0ms' }, /shorter than 1ms/],
    [{ 'web.hook.request.retry_times': '11' }, /less than or equal to 10/],
    [{ 'web.hook.request.retry_backoff': '0.5' }, /greater than or equal to 1/],
    [{ 'web.hook.ssl.verify': 'maybe' }, /must be a boolean/],
    [{ 'web.hook.ssl.certfile': 'c.pem' }, /needs web\.hook\.ssl\.keyfile too/],
    [{ 'web.hook.ssl.keyfile': 'k.pem' }, /needs web\.hook\.ssl\.certfile too/],
    [{ 'web.hook.headers.content-length': '5' }, /set by the HTTP client/],
    [{ 'web.hook.headers.Host': 'x' }, /set by the HTTP client/],
    [{ 'web.hook.headers.a(b)': 'x' }, /is not an HTTP header name/],
    [{ 'web.hook.headers.x-token': 'a\u0001b' }, /control characters/],
    [{ 'web.hook.url': 'http://x/' }, /"web\.hook\.url" is not allowed/],
    [{ 'web.hook.rule.message.publish.1': '{"action": "on_message_publish"' }, /not valid JSON/],
    [{ 'web.hook.rule.message.publish.1': '["on_message_publish"]' }, /must be a JSON object/],
    [{ 'web.hook.rule.message.publish.1': '{"topic": "a/b"}' }, /has no "action"/],
    [{ 'web.hook.rule.message.publish.1': '{"action": "on_message_deliver"}' }, /unknown action "on_message_deliver"/],
    [{ 'web.hook.rule.message.publish.1': '{"action": "on_client_connected"}' }, /the action of a message\.publish rule is "on_message_publish"/],
    [{ 'web.hook.rule.message.publish.1': '{"action": "on_message_publish", "topics": "a"}' }, /unknown field "topics"/],
    [{ 'web.hook.rule.message.publish.1': '{"action": "on_message_publish", "topic": "a/#/b"}' }, /invalid topic filter/],
    [{ 'web.hook.rule.message.publish.1': '{"action": "on_message_publish", "topic": 5}' }, /"topic" must be a string/],
    [{ 'web.hook.rule.client.connect.1': '{"action": "on_client_connect", "topic": "a"}' }, /client\.connect events have no topic/],
    [{ 'web.hook.rule.session.created.1': '{"action": "on_session_created"}' }, /the event one of client\.connect/],
    [{ 'web.hook.rule.message.publish': '{"action": "on_message_publish"}' }, /web\.hook\.rule\.<event>\.<n>/]
  ]
  for (const [settings, why] of cases) t.match(refusal(settings), why, JSON.stringify(settings))
})

t.test('a refusal names the file and line of the value', async (t) => {
  const text = 'web.hook.api.url = http://127.0.0.1:8080\n\nweb.hook.rule.client.connected.1 = {"action": "on_client_connect"}\n'
  t.throws(() => validatePluginConfig(plugin.schema, parseConfigText(text, 'etc/plugins/broker_web_hook.conf'), 'etc/plugins/broker_web_hook.conf'), {
    message: 'etc/plugins/broker_web_hook.conf:3: web.hook.rule.client.connected.1: the action of a client.connected rule is "on_client_connected", not "on_client_connect"'
  })
})

t.test('the shipped conf file is valid, has a rule for every event and documents every key', async (t) => {
  const text = await readFile(CONF, 'utf8')
  const config = validatePluginConfig(plugin.schema, parseConfigText(text, CONF), CONF)
  t.same(rulesOf(config).map((r) => r.event).sort(), Object.keys(EVENTS).sort())
  t.equal(config['web.hook.api.url'], 'http://127.0.0.1:8080/')
  const keys = Object.keys(plugin.schema.describe().keys as object)
  for (const key of keys) t.match(text, new RegExp(`^#* ?${key.replaceAll('.', '\\.')} = `, 'm'), `${key} is documented`)
  t.match(text, /^## web\.hook\.headers\.x-token = /m, 'a header example')
  // every commented-out example line is a valid setting
  const examples = parseConfigText(text.split('\n').filter((l) => /^## web\.hook\.[a-z_.-]+ = /.test(l)).map((l) => l.slice(3)).join('\n'), CONF)
  t.ok(examples.length >= 10)
  for (const { key, value } of examples) t.notOk(refusal({ [key]: value, ...(key === 'web.hook.ssl.certfile' ? { 'web.hook.ssl.keyfile': 'k' } : key === 'web.hook.ssl.keyfile' ? { 'web.hook.ssl.certfile': 'c' } : {}) }), `${key} = ${value}`)
})

t.test('parseUrl keeps the path and query', async (t) => {
  t.equal(parseUrl('https://hooks.example.com:8443/a/b?x=1'), 'https://hooks.example.com:8443/a/b?x=1')
  t.equal(parseUrl('localhost:80'), 'http://localhost/')
})

t.test('rules: the events they name and their topic tests', async (t) => {
  const publish = (topic: string): ReturnType<typeof parseRule> => parseRule('web.hook.rule.message.publish.x', JSON.stringify({ action: 'on_message_publish', topic }))
  const connected = parseRule('web.hook.rule.client.connected.1', '{"action": "on_client_connected"}')
  const events = eventsOf([publish('a/#'), publish('b/+/c'), connected])
  t.same([...events.keys()], ['message.publish', 'client.connected'])
  const test = events.get('message.publish')!
  t.ok(test('a'), 'a/# matches a')
  t.ok(test('a/x/y'))
  t.ok(test('b/1/c'))
  t.notOk(test('b/1/d'))
  t.notOk(test('c'))
  t.notOk(eventsOf([publish('#')]).get('message.publish')!('$SYS/x'), '# does not match $ topics')
  const all = eventsOf([publish('a/#'), parseRule('web.hook.rule.message.publish.all', '{"action": "on_message_publish"}')]).get('message.publish')!
  t.ok(all('anything/at/all'), 'a rule without a topic: every topic')
  t.ok(eventsOf([connected]).get('client.connected')!('x'))
})

/** Decodes EMQ X's base62 (the test's own reading of the format). */
function decode62 (text: string): Buffer {
  const values: number[] = []
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (c === '9') values.push(61 + text.charCodeAt(++i) - 65)
    else if (c >= 'A' && c <= 'Z') values.push(c.charCodeAt(0) - 65)
    else if (c >= 'a' && c <= 'z') values.push(c.charCodeAt(0) - 97 + 26)
    else values.push(c.charCodeAt(0) - 48 + 52)
  }
  const bits: string[] = []
  const full = Math.floor((values.length * 6) / 8) * 8
  values.forEach((v, n) => {
    const last = n === values.length - 1
    const width = last && (values.length * 6) % 8 !== 0 ? full - (values.length - 1) * 6 : 6
    bits.push(v.toString(2).padStart(width, '0'))
  })
  const joined = bits.join('')
  return Buffer.from(Array.from({ length: joined.length / 8 }, (_, i) => parseInt(joined.slice(i * 8, i * 8 + 8), 2)))
}

t.test('base62 as EMQ X writes it', async (t) => {
  t.equal(base62(Buffer.from('')), '')
  t.equal(base62(Buffer.from('a')), 'YB', '0x61: 011000 (24 Y) and 2 bits 01 (B)')
  t.equal(base62(Buffer.from('hi!')), 'aGkh')
  t.equal(base62(Buffer.from([0xff, 0xff, 0xff])), '9C9C9C9C', '63 is 9C')
  t.equal(base62(Buffer.from([0xf7, 0xdf])), '9A9AP', '61 is 9A; 0xf7df: 111101 111101 1111')
  t.equal(base62(Buffer.from([0xfb, 0xef, 0xbe])), '9B9B9B9B', '62 is 9B')
  for (const length of [1, 2, 3, 4, 5, 17, 256]) {
    const bytes = Buffer.from(Array.from({ length }, (_, i) => (i * 151 + length * 7) & 0xff))
    t.same(decode62(base62(bytes)), bytes, `round trip of ${length} bytes`)
  }
  t.equal(encodePayload(Buffer.from('héllo'), 'none'), 'héllo')
  t.equal(encodePayload(Buffer.from('héllo'), 'base64'), Buffer.from('héllo').toString('base64'))
})
