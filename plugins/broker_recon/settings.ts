// The settings of broker_recon (etc/plugins/broker_recon.conf).
import Joi from 'joi'
import { durationSetting } from '../../lib/plugin-kit/index.js'

export interface ReconConfig {
  /** how many clients the top lists show when the command or the request names no count */
  'recon.top': number
  /** ms between two samples of the event-loop delay histogram */
  'recon.event_loop.resolution': number
  /** `recon heapsnapshot` allowed */
  'recon.heapsnapshot': boolean
}

export const MAX_TOP = 1000

export const schema = Joi.object<ReconConfig>({
  'recon.top': Joi.number().integer().min(1).max(MAX_TOP).default(10),
  'recon.event_loop.resolution': durationSetting(10, 1, { ms: 1000, said: '1s' }),
  'recon.heapsnapshot': Joi.boolean().truthy('on').falsy('off').default(true)
})
