// broker_stomp's settings (etc/plugins/broker_stomp.conf), EMQ X 3.x's
// emqx_stomp keys.
import Joi from 'joi'
import { listenOnSchema } from '../../lib/plugin-kit/index.js'
import type { FrameLimits } from './frame.js'

export interface StompConfig {
  /** `<port>` or `<address>:<port>` */
  'stomp.listener': string
  /** shown in the listener listing (Node.js accepts on one event loop) */
  'stomp.listener.acceptors': number
  'stomp.listener.max_connections': number
  /** the gateway's own account: accepted without asking the auth chain; an empty login: none */
  'stomp.default_user.login': string
  'stomp.default_user.passcode': string
  /** a CONNECT without `login` goes on to the auth chain (true) or is refused here (false) */
  'stomp.allow_anonymous': boolean
  'stomp.frame.max_headers': number
  'stomp.frame.max_header_length': number
  'stomp.frame.max_body_length': number
}

const SWITCH = Joi.boolean().truthy('on', 'yes', 'enable').falsy('off', 'no', 'disable')

export const schema = Joi.object<StompConfig>({
  'stomp.listener': listenOnSchema().default('61613'),
  'stomp.listener.acceptors': Joi.number().integer().min(1).max(1024).default(4),
  'stomp.listener.max_connections': Joi.number().integer().min(1).default(512).meta({ live: true }),
  'stomp.default_user.login': Joi.string().allow('').default('guest').meta({ live: true }),
  'stomp.default_user.passcode': Joi.string().allow('').default('guest').meta({ live: true }),
  'stomp.allow_anonymous': SWITCH.default(true).meta({ live: true }),
  'stomp.frame.max_headers': Joi.number().integer().min(1).max(1000).default(10).meta({ live: true }),
  'stomp.frame.max_header_length': Joi.number().integer().min(16).max(1024 * 1024).default(1024).meta({ live: true }),
  'stomp.frame.max_body_length': Joi.number().integer().min(0).max(256 * 1024 * 1024).default(8192).meta({ live: true })
})

export function frameLimits (config: StompConfig): FrameLimits {
  return {
    maxHeaders: config['stomp.frame.max_headers'],
    maxHeaderLength: config['stomp.frame.max_header_length'],
    maxBodyLength: config['stomp.frame.max_body_length']
  }
}
