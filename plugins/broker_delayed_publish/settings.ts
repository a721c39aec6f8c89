// The plugin's settings (etc/plugins/broker_delayed_publish.conf).
import Joi from 'joi'

export interface DelayedConfig {
  /** the most delayed messages this node holds at once; 0 = no limit */
  'delayed.max_delayed_messages': number
}

export const schema = Joi.object<DelayedConfig>({
  'delayed.max_delayed_messages': Joi.number().integer().min(0).max(2 ** 32).default(0).meta({ live: true })
    .description('the most delayed messages this node holds at once; 0 = no limit')
})
