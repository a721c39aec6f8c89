// The cluster as the management API and broker_ctl see it: which nodes are
// live, and the node's operations (lib/service/operations.ts) run on one node
// or on all of them. One node (`cluster.discovery = manual`) is a cluster of itself.
import type { NodeOperations } from '../service/operations.js'
import { badrpc, isServiceError, ServiceError } from '../service/service-error.js'
import type { Member, Membership } from './membership.js'
import type { ClusterRpc } from './rpc.js'

/** The operations another node may ask for. */
export const REMOTE_METHODS = [
  'brokerInfo', 'nodeStats', 'metrics', 'metricsV2', 'stats', 'statsV2', 'alarms', 'alarmHistory',
  'connections', 'connection', 'sessions', 'session', 'subscriptions', 'clientSubscriptions', 'routes', 'route', 'listeners',
  'plugins', 'loadPlugin', 'unloadPlugin', 'reloadPlugin', 'reloadPluginCode', 'pluginSettings', 'setPluginSettings', 'pluginRoute',
  'configs', 'setConfig', 'banned', 'ban', 'unban', 'reloadAcl',
  'kick', 'cleanAclCache', 'subscribe', 'unsubscribe',
  'health', 'drain', 'drainStatus'
] as const

export type RemoteMethod = typeof REMOTE_METHODS[number]
type Method<M extends RemoteMethod> = NodeOperations[M] extends (...args: infer A) => infer R ? { args: A, result: Awaited<R> } : never

export interface NodeAnswer<T> { node: string, value: T }
export type NodeOutcome<T> = { node: string, ok: true, value: T } | { node: string, ok: false, error: Error }

export interface Cluster {
  /** the nodes share their state through Redis */
  readonly enabled: boolean
  /** the live nodes, sorted */
  members: () => Promise<Member[]>
  nodes: () => Promise<string[]>
  /** nodes seen since this node started that are gone */
  stopped: () => string[]
  /** this node's link to the others works (its heartbeat reached Redis lately) */
  linked: () => boolean
  /** runs on that node; an unknown node is `not_found`, one that does not answer `badrpc` */
  on: <M extends RemoteMethod>(node: string, method: M, ...args: Method<M>['args']) => Promise<Method<M>['result']>
  /** runs on every live node, in node order; the first failure fails it */
  all: <M extends RemoteMethod>(method: M, ...args: Method<M>['args']) => Promise<Array<NodeAnswer<Method<M>['result']>>>
  /** runs on every live node, each node's outcome as it came */
  each: <M extends RemoteMethod>(method: M, ...args: Method<M>['args']) => Promise<Array<NodeOutcome<Method<M>['result']>>>
}

/** The listings whose answer is a list of records (§2.1, §2.3, §2.5, §2.6). */
export type ListMethod = Extract<RemoteMethod, 'connections' | 'connection' | 'sessions' | 'session' | 'subscriptions' | 'clientSubscriptions' | 'routes' | 'route'>

/** Every live node's records of a listing, as one list in node order (what a cluster-wide listing shows). */
export async function rowsOfAll<Row = unknown> (cluster: Cluster, method: ListMethod, ...args: string[]): Promise<Row[]> {
  const all = cluster.all as (m: ListMethod, ...a: string[]) => Promise<Array<NodeAnswer<Row[]>>>
  return (await all(method, ...args)).flatMap((answer) => answer.value)
}

/** Runs an operation that only the node holding the client can do (kick, subscribe for it …): true when some node did it. */
export async function onHolder<M extends 'kick' | 'cleanAclCache' | 'subscribe' | 'unsubscribe'> (cluster: Cluster, method: M, ...args: Method<M>['args']): Promise<boolean> {
  const outcomes = await cluster.each(method, ...args)
  let done = false
  for (const outcome of outcomes) {
    if (outcome.ok) done ||= outcome.value !== false
    else if (!isServiceError(outcome.error) || outcome.error.kind !== 'not_online') throw outcome.error
  }
  return done
}

export function isRemoteMethod (name: string): name is RemoteMethod {
  return (REMOTE_METHODS as readonly string[]).includes(name)
}

/** Runs a remote request on this node's operations. */
export async function serveRemote (service: NodeOperations, method: string, args: unknown[]): Promise<unknown> {
  if (!isRemoteMethod(method)) throw new Error(`not a cluster operation: ${method}`)
  return await (service[method] as (...a: unknown[]) => unknown).apply(service, args)
}

const unknownNode = (node: string): ServiceError => new ServiceError('not_found', `node ${node} not found`)

export function singleNodeCluster (service: NodeOperations, startedAt: number, engineId: string): Cluster {
  const self = (): Member => ({ node: service.name, status: 'Running', started_at: startedAt, engine_id: engineId })
  const local = async (node: string, method: string, args: unknown[]): Promise<unknown> => {
    if (node !== service.name) throw unknownNode(node)
    return await serveRemote(service, method, args)
  }
  return {
    enabled: false,
    members: async () => [self()],
    nodes: async () => [service.name],
    stopped: () => [],
    linked: () => true,
    on: async (node, method, ...args) => await local(node, method, args) as never,
    all: async (method, ...args) => [{ node: service.name, value: await local(service.name, method, args) as never }],
    each: async (method, ...args) => await settle([service.name], async () => await local(service.name, method, args))
  }
}

export function redisCluster (membership: Membership, rpc: ClusterRpc): Cluster {
  const nodes = async (): Promise<string[]> => (await membership.members()).map((m) => m.node)
  return {
    enabled: true,
    members: async () => await membership.members(),
    nodes,
    stopped: () => membership.stopped(),
    linked: () => membership.linked(),
    on: async (node, method, ...args) => {
      // this node answers for itself without Redis (the API shows its alarms while Redis is down)
      if (node !== membership.self.node && !(await nodes()).includes(node)) {
        if (membership.stopped().includes(node)) throw badrpc(node, 'it left the cluster')
        throw unknownNode(node)
      }
      return await rpc.call(node, method, args) as never
    },
    all: async (method, ...args) => {
      const names = await nodes()
      const values = await Promise.all(names.map(async (node) => await rpc.call(node, method, args)))
      return names.map((node, i) => ({ node, value: values[i] as never }))
    },
    each: async (method, ...args) => await settle(await nodes(), async (node) => await rpc.call(node, method, args))
  }
}

async function settle<T> (nodes: string[], run: (node: string) => Promise<unknown>): Promise<Array<NodeOutcome<T>>> {
  const outcomes = await Promise.allSettled(nodes.map(run))
  return outcomes.map((o, i) => o.status === 'fulfilled'
    ? { node: nodes[i], ok: true, value: o.value as T }
    : { node: nodes[i], ok: false, error: o.reason as Error })
}
