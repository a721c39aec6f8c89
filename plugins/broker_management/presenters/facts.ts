// What the presenters read of the core: the facts' types and the two
// formats EMQ X used for times and sizes. The one place they import lib/ from.
export type { Alarm, ConfigFacts, ConnectionFacts, ListenerRecord, RouteFacts, SessionFacts, SubscriptionFacts } from '../../../lib/service/operations.js'
export type { BrokerInfo, NodeStats } from '../../../lib/sys/node-info.js'
export { datetime, megabytes } from '../../../lib/sys/node-info.js'
