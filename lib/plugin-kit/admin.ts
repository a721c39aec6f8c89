// The administration side of the kit, for plugins granted the
// `administration` capability (broker_management, later the dashboard): the
// node's operations and their facts, the cluster's calls, what presenters of
// SPEC records need. The operations themselves come from
// `ctx.capability('administration').node`.
export * from './index.js'
export type * from '../service/facts.js'
export type { NodeOperations } from '../service/operations.js'
export { ServiceError, isServiceError, type ServiceErrorKind } from '../service/service-error.js'
export { onHolder, singleNodeCluster, type ListMethod, type NodeAnswer, type NodeOutcome, type RemoteMethod } from '../cluster/cluster.js'
export { megabytes, type BrokerInfo, type NodeStats } from '../sys/node-info.js'
export { changeSetting, OVERRIDE_FILE } from '../config/overrides.js'
export { loadConfig } from '../config/load.js'
export { schema as nodeSettingsSchema } from '../config/schema.js'
export { MANAGEMENT_PLUGIN, V3_CALLER_STRATEGY, type AdministratorRole, type LoginOutcome, type ManagementApi } from './management-api.js'
export { listenerRecord, type ListenerLimits } from './http-listener-record.js'
