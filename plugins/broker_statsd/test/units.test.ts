// The parts of broker_statsd without a node: its settings (the shipped conf
// file, tags, refusals with file:line), counters as increments, the
// failure log's rate limit, and the names.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { INSTALL_ROOT, createLogger, parseConfigText, readPluginConfigLines, validatePluginConfig } from '../../../lib/plugin-kit/testing.js'
import { Failures } from '../failures.js'
import { Increments, statName } from '../readings.js'
import { parseTags, schema, type StatsdConfig } from '../settings.js'

const FILE = 'etc/plugins/broker_statsd.conf'
const read = (text: string): StatsdConfig => validatePluginConfig(schema, parseConfigText(text, FILE), FILE)

t.test('the shipped conf file holds the defaults; its examples, uncommented, are valid', async (t) => {
  const file = join(INSTALL_ROOT, FILE)
  const config = validatePluginConfig(schema, await readPluginConfigLines(file), file)
  t.same(config, {
    'statsd.host': '127.0.0.1',
    'statsd.port': 8125,
    'statsd.prefix': 'broker',
    'statsd.tags': '',
    'statsd.sample_rate': 1,
    'statsd.flush_interval': 10_000
  })
  const examples = (await readFile(file, 'utf8')).replace(/^##\s+(statsd\.\S+ = .*)$/gm, '$1')
  t.doesNotThrow(() => read(examples))
})

t.test('tags: key or key:value, %n is the node name', async (t) => {
  t.same(parseTags('node:%n, role:edge ,canary', 'emqx@10.0.0.1'), ['node:emqx@10.0.0.1', 'role:edge', 'canary'])
  t.same(parseTags('', 'n'), [])
  t.same(parseTags('dc:eu-west/1:a', 'n'), ['dc:eu-west/1:a'])
  for (const bad of ['a b', 'a|b', 'a,', 'x:#1', ':v', 'k:v@1', '1abc']) t.throws(() => parseTags(bad, 'n'), /is not a tag/, bad)
})

t.test('bad values are refused with file:line and key', async (t) => {
  t.throws(() => read('statsd.port = 0'), { message: /^etc\/plugins\/broker_statsd\.conf:1: statsd\.port: 0 is out of range 1\.\.65535$/ })
  t.throws(() => read('\nstatsd.port = 65536'), { message: /:2: statsd\.port: / })
  t.throws(() => read('statsd.host = "not a host"'), { message: /:1: statsd\.host: .*valid hostname/ })
  t.throws(() => read('statsd.sample_rate = 0'), { message: /:1: statsd\.sample_rate: 0 is out of range \(more than 0, at most 1\)$/ })
  t.throws(() => read('statsd.sample_rate = 1.5'), { message: /:1: statsd\.sample_rate: / })
  t.throws(() => read('statsd.flush_interval = 500ms'), { message: /:1: statsd\.flush_interval: .*shorter than 1000ms/ })
  t.throws(() => read('statsd.flush_interval = 8d'), { message: /:1: statsd\.flush_interval: .*longer than a day/ })
  t.throws(() => read('statsd.prefix = a..b'), { message: /:1: statsd\.prefix: / })
  t.throws(() => read('statsd.prefix = a:b'), { message: /:1: statsd\.prefix: / })
  t.throws(() => read('statsd.tags = a|b'), { message: /:1: statsd\.tags: .*is not a tag/ })
  t.throws(() => read('statsd.hots = x'), { message: /:1: statsd\.hots: unknown setting$/ })
  t.same(read('statsd.host = ::1\nstatsd.prefix =\nstatsd.flush_interval = 30'), { ...read(''), 'statsd.host': '::1', 'statsd.prefix': '', 'statsd.flush_interval': 30_000 })
})

t.test('counters go as increments since the previous push', async (t) => {
  const counters = new Increments({ a: 5, gone: 1 })
  t.same(counters.take({ a: 7, b: 3 }), [['a', 2], ['b', 3]], 'from the start values; a new counter counts from 0')
  t.same(counters.take({ a: 7, b: 3 }), [['a', 0], ['b', 0]])
  t.same(counters.take({ a: 2, b: 4 }), [['a', 2], ['b', 1]], 'a counter that went down started again: all of it is new')
  t.same(counters.take({ b: 4, gone: 1 }), [['b', 0], ['gone', 1]], 'one that went and came back counts from 0')
  t.same(new Increments().take({ x: 0.1 + 0.2 }), [['x', 0.3]], 'fractions rounded to 3 decimals')
})

t.test('names: levels separated by dots, nothing StatsD reserves', async (t) => {
  t.equal(statName('messages/qos1/received'), 'messages.qos1.received')
  t.equal(statName('webhook/dropped'), 'webhook.dropped')
  t.equal(statName('a:b|c@d#e'), 'a_b_c_d_e')
})

t.test('failures: all counted, one warning at first and then at most one per interval, saying how many were not logged', async (t) => {
  const warnings: Array<[Record<string, unknown>, string]> = []
  const logger = createLogger('error', false)
  logger.warn = ((fields: Record<string, unknown>, message: string) => { warnings.push([fields, message]) }) as typeof logger.warn
  let now = 1_000_000
  const failures = new Failures(logger, 'statsd.example:8125', 60_000, () => now)
  const enotfound = Object.assign(new Error('getaddrinfo ENOTFOUND statsd.example'), { code: 'ENOTFOUND' })
  for (let i = 0; i < 500; i++) {
    failures.report(enotfound)
    now += 100
  }
  t.equal(warnings.length, 1, '500 failures in 50 s: one warning')
  t.match(warnings[0], [{ server: 'statsd.example:8125', notLogged: 0 }, /^statsd: cannot send to statsd\.example:8125$/])
  now += 10_000
  failures.report(new Error('send EMSGSIZE'))
  t.equal(warnings.length, 2, 'a minute after the first: the next')
  t.match(warnings[1], [{ notLogged: 499 }, /499 more failures since the last warning/])
  t.same(failures.facts(), { count: 501, last: 'send EMSGSIZE', last_at: now })
})
