// The plugin's settings (etc/plugins/broker_modules.conf): EMQ X 3.x's
// `module.*` keys. Three switches and the presence options are live; the
// numbered keys (subscriptions, rewrite rules) are Joi patterns, so a change
// to them reloads the plugin. A broken numbered key is refused with the
// file:line of its own line (the error names the key).
import Joi from 'joi'
import { switchSetting, validTopicFilter } from '../../lib/plugin-kit/index.js'
import { parseRule, type RewriteRule } from './rewrite.js'

export type PresenceFormat = 'full' | 'short'
export type QoS = 0 | 1 | 2

export interface ModulesConfig {
  'module.presence': boolean
  'module.presence.qos': QoS
  'module.presence.format': PresenceFormat
  'module.subscription': boolean
  'module.rewrite': boolean
  [numbered: string]: unknown
}

/** One `module.subscription.<n>`: the filter template and its options. */
export interface SubscriptionItem {
  n: number
  topic: string
  qos: QoS
  /** MQTT 5 No Local, Retain As Publish, Retain Handling (3.x clients get the QoS only) */
  nl: boolean
  rap: boolean
  rh: 0 | 1 | 2
}

export const DEFAULTS = {
  'module.presence': true,
  'module.presence.qos': 1,
  'module.presence.format': 'full',
  'module.subscription': false,
  'module.subscription.qos': 1,
  'module.rewrite': false
} as const

const N = '([1-9]\\d{0,5})'
const SUBSCRIPTION_KEY = new RegExp(`^module\\.subscription\\.${N}\\.(topic|qos|nl|rap|rh)$`)
/** `module.rewrite.rule.<n>` (EMQ X 3.x: publish and subscribe), `module.rewrite.pub.rule.<n>` / `.sub.rule.<n>` (EMQ X 4.x: one side) */
const RULE_KEY = new RegExp(`^module\\.rewrite\\.(?:(pub|sub)\\.)?rule\\.${N}$`)
const key = (pattern: string): RegExp => new RegExp(`^module\\.${pattern.replace('<n>', N)}$`)

const flag01 = (): Joi.BooleanSchema => Joi.boolean().truthy('1', 'on').falsy('0', 'off')
const qos = (): Joi.NumberSchema => Joi.number().integer().valid(0, 1, 2)

const subscriptionTopic = Joi.string().trim().min(1).max(4096).custom((raw: string) => {
  // the placeholders stand for (part of) one topic level: check the filter with a neutral value in their place
  if (!validTopicFilter(raw.replaceAll('%c', 'c').replaceAll('%u', 'u'))) throw new Error(`not a topic filter: ${raw}`)
  return raw
})

const rule = (publishOnly: boolean): Joi.StringSchema => Joi.string().trim().custom((raw: string) => parseRule(raw, publishOnly))

export const schema = Joi.object<ModulesConfig>({
  'module.presence': switchSetting(DEFAULTS['module.presence']).meta({ live: true }),
  'module.presence.qos': qos().default(DEFAULTS['module.presence.qos']).meta({ live: true }),
  'module.presence.format': Joi.string().trim().lowercase().valid('full', 'short').default(DEFAULTS['module.presence.format']).meta({ live: true }),
  'module.subscription': switchSetting(DEFAULTS['module.subscription']).meta({ live: true }),
  'module.rewrite': switchSetting(DEFAULTS['module.rewrite']).meta({ live: true })
})
  .pattern(key('rewrite\\.rule\\.<n>'), rule(false))
  .pattern(key('rewrite\\.sub\\.rule\\.<n>'), rule(false))
  .pattern(key('rewrite\\.pub\\.rule\\.<n>'), rule(true))
  .pattern(key('subscription\\.<n>\\.topic'), subscriptionTopic)
  .pattern(key('subscription\\.<n>\\.(qos|rh)'), qos())
  .pattern(key('subscription\\.<n>\\.(nl|rap)'), flag01())
  .custom((config: ModulesConfig, helpers) => {
    for (const name of Object.keys(config)) {
      const option = SUBSCRIPTION_KEY.exec(name)
      if (option !== null && option[2] !== 'topic' && config[`module.subscription.${option[1]}.topic`] === undefined) {
        return helpers.error('any.invalid', { why: `no module.subscription.${option[1]}.topic for it` }, { ...helpers.state, path: [name] })
      }
    }
    return config
  })
  .messages({ 'any.invalid': '{{#why}}', 'any.custom': '{{#error.message}}' })

/** The `module.subscription.<n>` items, by number. */
export function subscriptionItems (config: ModulesConfig): SubscriptionItem[] {
  const items: SubscriptionItem[] = []
  for (const key of Object.keys(config)) {
    const match = SUBSCRIPTION_KEY.exec(key)
    if (match === null || match[2] !== 'topic') continue
    const at = (option: string): unknown => config[`module.subscription.${match[1]}.${option}`]
    items.push({
      n: Number(match[1]),
      topic: config[key] as string,
      qos: (at('qos') ?? DEFAULTS['module.subscription.qos']) as QoS,
      nl: at('nl') === true,
      rap: at('rap') === true,
      rh: (at('rh') ?? 0) as 0 | 1 | 2
    })
  }
  return items.sort((a, b) => a.n - b.n)
}

export interface RewriteRules {
  /** tried in order on the topic of every PUBLISH */
  publish: RewriteRule[]
  /** tried in order on each filter of SUBSCRIBE and UNSUBSCRIBE */
  subscribe: RewriteRule[]
}

/**
 * The rules in the order they are tried: by number; at one number the EMQ X
 * 3.x form (`module.rewrite.rule.<n>`, both sides) before the one-sided form.
 */
export function rewriteRules (config: ModulesConfig): RewriteRules {
  const found: Array<{ n: number, side: string, rule: RewriteRule }> = []
  for (const key of Object.keys(config)) {
    const match = RULE_KEY.exec(key)
    if (match !== null) found.push({ n: Number(match[2]), side: match[1] ?? '', rule: config[key] as RewriteRule })
  }
  found.sort((a, b) => a.n - b.n || a.side.length - b.side.length || a.side.localeCompare(b.side))
  return {
    publish: found.filter((r) => r.side !== 'sub').map((r) => r.rule),
    subscribe: found.filter((r) => r.side !== 'pub').map((r) => r.rule)
  }
}
