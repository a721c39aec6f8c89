// The administration side of the kit, for plugins granted the
// `administration` capability (broker_management, later the dashboard): the
// node service's operations and records, the cluster's calls, setting
// parsers. Everything here is also reachable through `ctx.capability('administration')`.
export * from './index.js'
export type { ConfigRecord, ConnectionRecord, NodeService, NodeService as NodeView, SessionRecord, SubscriptionRecord, ServiceError } from '../service/node-service.js'
export { onHolder, type ListMethod, type NodeAnswer, type NodeOutcome, type RemoteMethod } from '../cluster/cluster.js'
export { megabytes, type BrokerInfo, type NodeStats } from '../sys/node-info.js'
export { singleNodeCluster } from '../cluster/cluster.js'
export { changeSetting, OVERRIDE_FILE } from '../config/overrides.js'
export { loadConfig } from '../config/load.js'
export { schema as nodeSettingsSchema } from '../config/schema.js'
