// broker_sn's settings (etc/plugins/broker_sn.conf): EMQ X 3.x emqx_sn's
// keys, plus the bounds an operator needs on a UDP listener (packet size,
// clients, queue, retransmission), each documented in the .conf file.
import Joi from 'joi'
import { durationSetting, listenOnSchema, validTopicName } from '../../lib/plugin-kit/index.js'

export const PREDEFINED_PREFIX = 'mqtt.sn.predefined.topic.'

export interface SnConfig {
  /** `<port>` or `<address>:<port>` */
  'mqtt.sn.port': string
  /** ms between ADVERTISE broadcasts; 0: none */
  'mqtt.sn.advertise_duration': number
  /** where ADVERTISE goes: `<address>` (the listener's port) or `<address>:<port>` */
  'mqtt.sn.advertise_to': string
  'mqtt.sn.gateway_id': number
  /** ms a client may take from its CONNECT to the end of the will exchange */
  'mqtt.sn.idle_timeout': number
  /** the user name and password every MQTT-SN client is connected with ('' none) */
  'mqtt.sn.username': string
  'mqtt.sn.password': string
  'mqtt.sn.enable_qos3': boolean
  'mqtt.sn.subs_resume': boolean
  'mqtt.sn.max_connections': number
  /** octets: a longer datagram is dropped (and a longer message for a client is not sent) */
  'mqtt.sn.max_packet_size': number
  /** ms before an unacknowledged PUBLISH, PUBREL or REGISTER to a client is sent again */
  'mqtt.sn.retry_interval': number
  'mqtt.sn.max_retries': number
  /** messages waiting in the gateway for one client (asleep, or behind an unacknowledged one) */
  'mqtt.sn.max_queue_len': number
  /** `mqtt.sn.predefined.topic.<id>`: the topic name of predefined topic id `<id>` */
  [predefined: `mqtt.sn.predefined.topic.${string}`]: string
}

const SWITCH = Joi.boolean().truthy('on', 'yes', 'enable').falsy('off', 'no', 'disable')
// a custom rule's Error is the whole message (not "failed custom validation because …")
const custom = <S extends Joi.Schema>(schema: S): S => schema.messages({ 'any.custom': '{{#error.message}}' }) as S

/** `255.255.255.255` or `10.0.0.255:1884`, `[ff02::1]:1884` */
const ADVERTISE_TO = /^(?:\[[0-9a-fA-F:.]+\]|[^\s:[\]]+)(?::\d{1,5})?$/

export const schema = Joi.object<SnConfig>({
  'mqtt.sn.port': listenOnSchema().default('1884'),
  'mqtt.sn.advertise_duration': custom(durationSetting(15 * 60_000, 0).custom((ms: number) => {
    if (ms !== 0 && ms < 1000) throw new Error('it is under 1s (0 turns ADVERTISE off)')
    if (ms > 0xffff * 1000) throw new Error('it is over 65535s (ADVERTISE\'s Duration field)')
    return ms
  })).meta({ live: true }),
  'mqtt.sn.advertise_to': custom(Joi.string().pattern(ADVERTISE_TO, '<address> or <address>:<port>').custom((value: string) => {
    if (advertiseTarget(value, 0).port > 65535) throw new Error(`${value} has a port over 65535`)
    return value
  })).default('255.255.255.255').meta({ live: true }),
  'mqtt.sn.gateway_id': Joi.number().integer().min(0).max(255).default(1).meta({ live: true }),
  'mqtt.sn.idle_timeout': durationSetting(30_000, 1000).meta({ live: true }),
  'mqtt.sn.username': Joi.string().allow('').default('').meta({ live: true }),
  'mqtt.sn.password': Joi.string().allow('').default('').meta({ live: true }),
  'mqtt.sn.enable_qos3': SWITCH.default(false).meta({ live: true }),
  'mqtt.sn.subs_resume': SWITCH.default(false).meta({ live: true }),
  'mqtt.sn.max_connections': Joi.number().integer().min(1).max(10_000_000).default(1024).meta({ live: true }),
  'mqtt.sn.max_packet_size': Joi.number().integer().min(32).max(0xffff).default(4096).meta({ live: true }),
  'mqtt.sn.retry_interval': durationSetting(10_000, 100).meta({ live: true }),
  'mqtt.sn.max_retries': Joi.number().integer().min(0).max(100).default(4).meta({ live: true }),
  'mqtt.sn.max_queue_len': Joi.number().integer().min(1).max(1_000_000).default(1000).meta({ live: true })
})
  .pattern(/^mqtt\.sn\.predefined\.topic\./, custom(Joi.string().custom((topic: string, helpers) => {
    const key = String(helpers.state.path?.at(-1) ?? '')
    const id = key.slice(PREDEFINED_PREFIX.length)
    if (!/^\d{1,5}$/.test(id) || Number(id) > 0xfffe) throw new Error(`${key}: the topic id must be a number 0-65534`)
    // EMQ X's file names id 0 "reserved": it is never used
    if (Number(id) !== 0 && !validTopicName(topic)) throw new Error(`${JSON.stringify(topic)} is not a topic name (no + or #)`)
    return topic
  })))

/** The predefined topics: id → topic name, and topic name → the lowest id naming it. */
export interface Predefined {
  byId: ReadonlyMap<number, string>
  byName: ReadonlyMap<string, number>
}

export function predefinedTopics (config: SnConfig): Predefined {
  const byId = new Map<number, string>()
  const byName = new Map<string, number>()
  const keys = Object.keys(config).filter((key) => key.startsWith(PREDEFINED_PREFIX))
  for (const key of keys) {
    const id = Number(key.slice(PREDEFINED_PREFIX.length))
    if (id === 0) continue
    const topic = config[key as `mqtt.sn.predefined.topic.${string}`]
    byId.set(id, topic)
    const known = byName.get(topic)
    if (known === undefined || id < known) byName.set(topic, id)
  }
  return { byId, byName }
}

/** `mqtt.sn.advertise_to` as an address and a port (the listener's when it names none). */
export function advertiseTarget (value: string, listenerPort: number): { host: string, port: number } {
  const bracket = /^\[(.+)\](?::(\d+))?$/.exec(value)
  if (bracket !== null) return { host: bracket[1], port: bracket[2] === undefined ? listenerPort : Number(bracket[2]) }
  const [host, port] = value.split(':')
  return { host, port: port === undefined ? listenerPort : Number(port) }
}
