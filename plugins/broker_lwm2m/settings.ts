// broker_lwm2m's settings (etc/plugins/broker_lwm2m.conf): EMQ X 3.x's
// emqx_lwm2m keys. Durations are read as milliseconds (`lwm2m.lifetime_min`
// `1s`, a bare number is seconds).
import Joi from 'joi'
import { durationSetting, listenOnSchema, validTopicName } from '../../lib/plugin-kit/index.js'

export interface Lwm2mConfig {
  /** `<port>` or `<address>:<port>` of the UDP listener */
  'lwm2m.port': string
  /** a registration's lifetime (`lt`) must be within these, in ms */
  'lwm2m.lifetime_min': number
  'lwm2m.lifetime_max': number
  /** ms a queue-mode (UQ) device is taken as awake after it spoke */
  'lwm2m.qmode_time_window': number
  /** observe every object instance a device registers with */
  'lwm2m.auto_observe': boolean
  /** the topic prefix of a device's topics; `%e` is its endpoint name */
  'lwm2m.mountpoint': string
  'lwm2m.topics.command': string
  'lwm2m.topics.response': string
  'lwm2m.topics.notify': string
  'lwm2m.topics.register': string
  'lwm2m.topics.update': string
  /** the folder of the object definitions (XML), relative to the install root */
  'lwm2m.xml_dir': string
  /** registered devices at most */
  'lwm2m.max_connections': number
  /** ms a command waits for the device's answer */
  'lwm2m.command_timeout': number
  /** commands held for a sleeping queue-mode device, at most */
  'lwm2m.qmode_max_commands': number
}

const SWITCH = Joi.boolean().truthy('on', 'yes', 'enable').falsy('off', 'no', 'disable')

/** A topic (relative to the mountpoint): the command one may end in a wildcard, the others are names. */
function topicSetting (def: string, filter = false): Joi.StringSchema {
  return Joi.string().min(1).max(1024).custom((value: string) => {
    const name = filter ? value.replace(/(?:^|\/)#$/, '').replace(/\/$/, '') : value
    if (name !== '' && !validTopicName(name)) throw new Error(`"${value}" is not a topic${filter ? ' (a trailing /# is allowed)' : ''}`)
    return value
  }).default(def)
}

export const schema = Joi.object<Lwm2mConfig>({
  'lwm2m.port': listenOnSchema().default('5783'),
  'lwm2m.lifetime_min': durationSetting(1000, 1000),
  'lwm2m.lifetime_max': durationSetting(86_400_000, 1000),
  'lwm2m.qmode_time_window': durationSetting(22_000, 0).meta({ live: true }),
  'lwm2m.auto_observe': SWITCH.default(false).meta({ live: true }),
  'lwm2m.mountpoint': Joi.string().allow('').max(512).custom((value: string) => {
    if (value !== '' && !validTopicName(value.replaceAll('%e', 'e'))) throw new Error(`"${value}" is not a topic prefix (no + or #)`)
    return value
  }).default('lwm2m/%e/'),
  'lwm2m.topics.command': topicSetting('dn/#', true),
  'lwm2m.topics.response': topicSetting('up/resp'),
  'lwm2m.topics.notify': topicSetting('up/notify'),
  'lwm2m.topics.register': topicSetting('up/resp'),
  'lwm2m.topics.update': topicSetting('up/resp'),
  'lwm2m.xml_dir': Joi.string().min(1).default('etc/lwm2m_xml'),
  'lwm2m.max_connections': Joi.number().integer().min(1).default(100_000).meta({ live: true }),
  'lwm2m.command_timeout': durationSetting(30_000, 100).meta({ live: true }),
  'lwm2m.qmode_max_commands': Joi.number().integer().min(1).max(10_000).default(100).meta({ live: true })
})

/** What the schema cannot say key by key: the lifetime bounds in order. */
export function checkConfig (config: Lwm2mConfig): void {
  if (config['lwm2m.lifetime_min'] > config['lwm2m.lifetime_max']) throw new Error('lwm2m.lifetime_min is over lwm2m.lifetime_max')
}
