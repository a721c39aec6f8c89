// broker_coap's settings (etc/plugins/broker_coap.conf): EMQ X 3.x's
// emqx_coap keys (coap.port, coap.keepalive, coap.enable_stats), plus the
// bounds and RFC 7252 transmission parameters a UDP gateway needs.
import Joi from 'joi'
import { bytesizeSetting, coap, durationSetting, listenOnSchema, switchSetting } from '../../lib/plugin-kit/index.js'

export interface CoapConfig {
  /** `<port>` or `<address>:<port>` of the UDP listener */
  'coap.port': string
  /** ms: a CoAP client silent this long is disconnected (its observers are pinged first) */
  'coap.keepalive': number
  /** count each CoAP client's datagram bytes in its connection's and the node's byte statistics */
  'coap.enable_stats': boolean
  /** CoAP clients (client ids) at once; a request for one more gets 5.03 */
  'coap.max_clients': number
  /** observations (GET with Observe) of one client at once */
  'coap.max_observations': number
  /** bytes: the largest request body (one datagram or Block1 blocks); larger gets 4.13 */
  'coap.max_body_size': number
  /** ms: RFC 7252 ACK_TIMEOUT of the gateway's CON messages */
  'coap.ack_timeout': number
  /** RFC 7252 MAX_RETRANSMIT */
  'coap.max_retransmit': number
}

/** a duration or size setting of the kit, refused outside [min, max] */
function within (schema: Joi.AnySchema, min: number, max: number, unit: string): Joi.AnySchema {
  return schema.custom((value: number) => {
    if (value < min || value > max) throw new Error(`must be from ${min} to ${max} ${unit}`)
    return value
  })
}

export const schema = Joi.object<CoapConfig>({
  'coap.port': listenOnSchema().default('5683'),
  'coap.keepalive': within(durationSetting(120_000), 1000, 0xffff * 1000, 'ms').meta({ live: true }),
  'coap.enable_stats': switchSetting(false).meta({ live: true }),
  'coap.max_clients': Joi.number().integer().min(1).max(1_000_000).default(10_000).meta({ live: true }),
  'coap.max_observations': Joi.number().integer().min(1).max(10_000).default(64).meta({ live: true }),
  'coap.max_body_size': within(bytesizeSetting(1024 * 1024), 16, 256 * 1024 * 1024, 'bytes'),
  'coap.ack_timeout': within(durationSetting(2000), 10, 60_000, 'ms').meta({ live: true }),
  'coap.max_retransmit': Joi.number().integer().min(0).max(10).default(4).meta({ live: true })
})

export function transmission (config: CoapConfig): coap.TransmissionParameters {
  return { ackTimeoutMs: config['coap.ack_timeout'], ackRandomFactor: coap.DEFAULT_TRANSMISSION.ackRandomFactor, maxRetransmit: config['coap.max_retransmit'] }
}
