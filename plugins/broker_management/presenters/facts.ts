// What the presenters read of the core (through the kit's administration
// side): the facts' types and the two formats EMQ X used for times and sizes.
export type { Alarm, BrokerInfo, ConfigFacts, ConnectionFacts, ListenerRecord, NodeStats, PluginSetting, RouteFacts, SessionFacts, SubscriptionFacts } from '../../../lib/plugin-kit/admin.js'
export { specTime, megabytes } from '../../../lib/plugin-kit/admin.js'
