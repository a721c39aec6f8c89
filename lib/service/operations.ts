// The node's operations: what the management API, broker_ctl and the cluster
// RPC call (lib/cluster/cluster.ts REMOTE_METHODS). They answer plain facts
// (facts.ts) and refuse with a ServiceError (service-error.ts). Grouped by who
// may call them: `NodeQueries` read (a plugin's `ctx.node`), `BrokerActions`
// act on traffic (a plugin's `ctx.broker`), `Administration` is the rest
// (plugins, settings, banned entries, drain, the cluster), granted only to
// the management API. The SPEC records are made of the facts by the API's
// presenters (plugins/broker_management/presenters/) and by broker_ctl.
import type { Cluster } from '../cluster/cluster.js'
import { bannedOperations, type BannedOperations } from './banned-operations.js'
import { brokerActions, type BrokerActions } from './broker-actions.js'
import { clientQueries, type ClientQueries } from './client-queries.js'
import { configOperations, type ConfigOperations } from './config-operations.js'
import { OperationContext, type NodeParts } from './context.js'
import type { DrainStatus } from './drain.js'
import { nodeStatus, type NodeStatus } from './node-status.js'
import { pluginOperations, type PluginOperations } from './plugin-operations.js'
import { ServiceError } from './service-error.js'

export type { NodeParts } from './context.js'
export type { BrokerActions, ApiPublishRequest } from './broker-actions.js'
export type { BanRequest } from './banned-operations.js'
export type { BannedEntry, BannedKind } from '../access/banned.js'
export type { CodeReplaced, PluginRecord } from '../plugins/host.js'
export type { Health } from '../node-state.js'
export type { DrainStatus } from './drain.js'
export type * from './facts.js'
export { ServiceError, isServiceError, type ServiceErrorKind } from './service-error.js'

/** What reads the node and changes nothing. */
export type NodeQueries = { readonly name: string } & NodeStatus & ClientQueries

export interface DrainOperations {
  /** Stops accepting connections and disconnects the clients at `rate` per second (default `node.drain_rate`). */
  drain: (rate?: number) => DrainStatus
  drainStatus: () => DrainStatus
}

/** Everything else: plugins, settings, ACL, banned entries, drain, the cluster. */
export type Administration = PluginOperations & ConfigOperations & BannedOperations & DrainOperations & {
  /** the cluster this node is part of (a cluster of itself on one node); set once the node has joined */
  cluster: Cluster
}

export type NodeOperations = NodeQueries & BrokerActions & Administration

export function createNodeOperations (parts: NodeParts): NodeOperations {
  let cluster: Cluster | undefined
  const context = new OperationContext(parts, () => cluster)
  const drain: DrainOperations = {
    drain: (rate) => {
      if (rate !== undefined && (!Number.isInteger(rate) || rate < 1)) throw new ServiceError('bad_value', 'rate must be a whole number of clients per second, at least 1')
      const state = parts.lifecycle.state
      if (state !== 'running' && state !== 'draining') throw new ServiceError('failed', `the node is ${state}`)
      return parts.drain.start(rate ?? parts.config.get('node.drain_rate'))
    },
    drainStatus: () => parts.drain.status()
  }
  const plugins = pluginOperations(context)
  return {
    get name () { return context.name },
    get cluster () {
      if (cluster === undefined) throw new ServiceError('failed', 'the node has not joined its cluster yet')
      return cluster
    },
    set cluster (joined: Cluster) { cluster = joined },
    ...nodeStatus(context),
    ...clientQueries(context),
    ...brokerActions(context),
    ...plugins,
    ...configOperations(context, plugins),
    ...bannedOperations(context),
    ...drain
  }
}

/** Every query, each named once: the compiler checks the list is whole. */
const QUERIES: Record<Exclude<keyof NodeQueries, 'name'>, true> = {
  client: true, clients: true, connections: true, connection: true, sessions: true, session: true, subscriptions: true, clientSubscriptions: true,
  routes: true, route: true, setting: true, prometheus: true, brokerInfo: true, nodeStats: true, metrics: true, stats: true, metricsV2: true,
  statsV2: true, alarms: true, alarmHistory: true, listeners: true, health: true, clientLoad: true
}

const ACTIONS: Record<keyof BrokerActions, true> = { publish: true, subscribe: true, unsubscribe: true, kick: true }

function pick<T> (operations: NodeOperations, keys: Record<string, true>): T {
  return Object.fromEntries(Object.keys(keys).map((key) => [key, operations[key as keyof NodeOperations]])) as T
}

/** The read-only view (a plugin's `ctx.node`): the queries alone, nothing else reachable through it. */
export function queriesOf (operations: NodeOperations): NodeQueries {
  return Object.defineProperty(pick<Omit<NodeQueries, 'name'>>(operations, QUERIES), 'name', { get: () => operations.name, enumerable: true }) as NodeQueries
}

/** The actions view (a plugin's `ctx.broker`). */
export function actionsOf (operations: NodeOperations): BrokerActions {
  return pick<BrokerActions>(operations, ACTIONS)
}
