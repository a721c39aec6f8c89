// The settings of broker_statsd (etc/plugins/broker_statsd.conf) and what
// they turn into: the server, the prefix, the DogStatsD tags with `%n`
// filled in, the sample rate and the flush interval.
import Joi from 'joi'
import { durationSetting } from '../../lib/plugin-kit/index.js'

export interface StatsdConfig {
  /** a host name or an IPv4/IPv6 address */
  'statsd.host': string
  'statsd.port': number
  /** put before every metric name, with a dot; empty: none */
  'statsd.prefix': string
  /** DogStatsD tags, `key:value` or `key`, comma-separated; `%n` is the node name; empty: plain StatsD (no tags) */
  'statsd.tags': string
  /** 0 < rate <= 1: the share of lines sent (`|@rate`) */
  'statsd.sample_rate': number
  /** milliseconds between two pushes */
  'statsd.flush_interval': number
}

/** A tag: a key, then `:value` (the value may hold `%n`, `:`, `.`, `/`, `-`). */
const TAG = /^[A-Za-z][A-Za-z0-9_.\-/]*(:[A-Za-z0-9_.\-/:%]+)?$/
const DAY_MS = 86_400_000

/** `node:%n,role:edge` → `['node:<node>', 'role:edge']` (what the lines carry after `|#`). */
export function parseTags (text: string, node: string): string[] {
  if (text.trim() === '') return []
  return text.split(',').map((raw) => {
    const tag = raw.trim()
    if (!TAG.test(tag)) throw new Error(`"${tag}" is not a tag: key or key:value (letters, digits, _ . - / and %n in a value)`)
    return tag.replaceAll('%n', node)
  })
}

export const schema = Joi.object<StatsdConfig>({
  'statsd.host': Joi.string().trim().hostname().default('127.0.0.1'),
  'statsd.port': Joi.number().integer().min(1).max(65535).default(8125),
  'statsd.prefix': Joi.string().trim().allow('').pattern(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/, 'dot-separated words').default('broker'),
  'statsd.tags': Joi.string().trim().allow('').custom((raw: string) => {
    parseTags(raw, 'node')
    return raw
  }).default(''),
  'statsd.sample_rate': Joi.number().greater(0).max(1).default(1),
  'statsd.flush_interval': durationSetting(10_000, 1000, { ms: DAY_MS, said: 'a day' })
})
