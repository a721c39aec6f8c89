// The v2 route table (SPEC §4.5). A v2 row is a v3 row (routes.ts) under
// another path: the same validation and handler, its result turned into the
// v2 shape (presenters/records-v2.ts); an operation with no data answers `[]`. Only the
// rows with no v3 counterpart (v2 metrics and statistics, plugin on/off by
// `{active}`) have handlers of their own, and those call the node's operations.
import Joi from 'joi'
import type { BrokerInfo, ListenerRecord, PluginSetting } from './presenters/facts.js'
import * as R from './responses.js'
import * as V2 from './responses-v2.js'
import { clientV2, configV2, listenerV2, monitoringV2, nodeInfoV2, sessionV2, subscriptionV2 } from './presenters/records-v2.js'
import type { ConfigRecord, ConnectionRecord, SessionRecord, SubscriptionRecord } from './presenters/records-v3.js'
import { everyListing, isNodeError, onNode, routes as v3Routes, type Method, type NodeError, type Route, type RouteRequest } from './routes.js'

/** The v3 row `name` (and `path`, where v3 has two rows of that name); a missing one fails at import. */
function v3 (name: string, path?: string): Route {
  const found = v3Routes.filter((r) => r.name === name && (path === undefined || r.path === path))
  if (found.length !== 1) throw new Error(`v2 routes: no single v3 row ${name} ${path ?? ''}`)
  return found[0]
}

interface Adapt {
  /** the v2 result from the v3 row's (default: `[]`, an operation with no data) */
  result?: (value: unknown) => unknown
  /** the v3 row's request from the v2 one */
  request?: (req: RouteRequest) => RouteRequest
  validate?: Route['validate']
  /** the schema of the v2 result (responses-v2.ts); default: the v3 row's when `result` is `same`, `[]` when there is none */
  response?: Route['response']
}

const noData = (): [] => []
const same = (value: unknown): unknown => value

/** Each record of a list through `f`; a node's error entry (NodeError) as it is. */
function each<T> (f: (record: T) => unknown): (value: unknown) => unknown[] {
  return (value) => (value as T[]).map((record) => isNodeError(record) ? record : f(record))
}

/** A lookup: `{objects: [...]}`. */
function objects<T> (f: (record: T) => unknown = same): (value: unknown) => { objects: unknown[] } {
  return (value) => ({ objects: each(f)(value) })
}

/** A node that did not answer, as its value in an object keyed by node name (README: "A node that does not answer"). */
const errorValue = ({ error, message }: NodeError): { error: string, message: string } => ({ error, message })

/** `[{node, <field>}]` (v3's cluster form) → `{<node>: <field> through f}`. */
function byNode<T> (field: string, f: (record: T) => unknown): (value: unknown) => Record<string, unknown> {
  return (value) => Object.fromEntries((value as Array<Record<string, T[]> & { node: string }>).map((row) =>
    [row.node, isNodeError(row) ? errorValue(row) : row[field].map(f)]))
}

/** Every live node's answer to `method` as `[node, answer]`; a node that did not answer has its error value. */
async function keyedByNode (node: Parameters<typeof everyListing>[0], method: 'metricsV2' | 'statsV2'): Promise<Array<[string, unknown]>> {
  return (await everyListing(node, method)).map((a) => [a.node, isNodeError(a) ? errorValue(a) : a.value])
}

/** `'GET /path'`: the v2 row doing what the v3 row `source` does. */
function from (methodPath: string, source: Route, { result = noData, request, validate = source.validate, response }: Adapt = {}): Route {
  const [method, path] = methodPath.split(' ') as [Method, string]
  response ??= result === noData ? R.empty : result === same ? source.response : undefined
  if (response === undefined) throw new Error(`v2 routes: ${methodPath} has no response schema`)
  const row: Route = {
    method,
    path,
    name: source.name,
    descr: source.descr,
    role: source.role,
    response,
    handler: async (req, api) => result(await source.handler(request === undefined ? req : request(req), api))
  }
  if (source.paged === true) row.paged = true
  if (source.auth === false) row.auth = false
  if (source.raw === true) row.raw = true
  if (validate !== undefined) row.validate = validate
  return row
}

const loadPlugin = v3('load_plugin')
const unloadPlugin = v3('unload_plugin')

export const routesV2: readonly Route[] = Object.freeze([
  from('GET /', v3('list_apis'), { result: same }),
  from('GET /openapi.json', v3('openapi'), { result: same }),

  // --- nodes (§2.9) ---
  from('GET /management/nodes', v3('list_brokers'), { result: each(nodeInfoV2), response: Joi.array().items(R.orNodeError(V2.nodeInfoListed)) }),
  from('GET /management/nodes/:node', v3('lookup_broker'), { result: (info) => nodeInfoV2(info as BrokerInfo), response: V2.nodeInfo }),
  from('GET /monitoring/nodes', v3('list_nodes'), { result: each(monitoringV2), response: Joi.array().items(R.orNodeError(V2.monitoring)) }),
  from('GET /monitoring/nodes/:node', v3('lookup_node'), { result: (stats) => monitoringV2(stats as Parameters<typeof monitoringV2>[0]), response: V2.monitoring }),

  // --- clients (§2.2) ---
  from('GET /nodes/:node/clients', v3('list_node_connections'), { result: each(clientV2), response: V2.client }),
  from('GET /nodes/:node/clients/:clientid', v3('lookup_node_connection'), { result: objects<ConnectionRecord>(clientV2), response: V2.objects(V2.client) }),
  from('GET /clients/:clientid', v3('lookup_connections'), { result: objects<ConnectionRecord>(clientV2), response: V2.objects(V2.client) }),
  from('DELETE /clients/:clientid', v3('kickout_connection')),
  from('PUT /clients/:clientid/clean_acl_cache', v3('clean_acl_cache'), {
    validate: { payload: Joi.object({ topic: Joi.string().min(1).required() }) },
    request: (req) => ({ ...req, params: { ...req.params, topic: (req.payload as { topic: string }).topic } })
  }),

  // --- sessions (§2.4) ---
  from('GET /nodes/:node/sessions', v3('list_node_sessions'), { result: each(sessionV2), response: V2.session }),
  from('GET /nodes/:node/sessions/:clientid', v3('lookup_node_session'), { result: objects<SessionRecord>(sessionV2), response: V2.objects(V2.session) }),
  from('GET /sessions/:clientid', v3('lookup_session'), { result: objects<SessionRecord>(sessionV2), response: V2.objects(V2.session) }),

  // --- subscriptions and routes (§2.5, §2.6) ---
  from('GET /nodes/:node/subscriptions', v3('list_node_subscriptions'), { result: each(subscriptionV2), response: V2.subscription }),
  from('GET /nodes/:node/subscriptions/:clientid', v3('lookup_client_subscriptions_with_node'), { result: objects<SubscriptionRecord>(subscriptionV2), response: V2.objects(V2.subscription) }),
  from('GET /subscriptions/:clientid', v3('lookup_client_subscriptions'), { result: objects<SubscriptionRecord>(subscriptionV2), response: V2.objects(V2.subscription) }),
  from('GET /routes', v3('list_routes'), { result: same }),
  from('GET /routes/:topic', v3('lookup_routes'), { result: objects(), response: V2.objects(R.route) }),

  // --- publish, subscribe, unsubscribe ---
  from('POST /mqtt/publish', v3('mqtt_publish')),
  from('POST /mqtt/subscribe', v3('mqtt_subscribe')),
  from('POST /mqtt/unsubscribe', v3('mqtt_unsubscribe')),

  // --- plugins (§2.13) ---
  from('GET /nodes/:node/plugins', v3('list_node_plugins'), { result: same }),
  {
    method: 'PUT',
    path: '/nodes/:node/plugins/:plugin',
    name: 'start_stop_plugin',
    role: 'administrator',
    descr: 'Load (active: true) or unload (active: false) a plugin',
    response: R.empty,
    validate: { payload: Joi.object({ active: Joi.boolean().required() }) },
    handler: async (req, api) => {
      await ((req.payload as { active: boolean }).active ? loadPlugin : unloadPlugin).handler(req, api)
      return []
    }
  },

  // --- listeners (§2.10) ---
  from('GET /monitoring/listeners', v3('list_listeners'), { result: byNode<ListenerRecord>('listeners', listenerV2), response: V2.keyedByNode(Joi.array().items(V2.listener)) }),
  from('GET /monitoring/listeners/:node', v3('list_node_listeners'), { result: each(listenerV2), response: Joi.array().items(V2.listener) }),

  // --- metrics and statistics (§2.11, §2.12, v2 keys) ---
  {
    method: 'GET', path: '/monitoring/metrics/', name: 'list_all_metrics', role: 'viewer', descr: 'The metrics of every node, keyed by node name',
    response: V2.keyedByNode(R.counters),
    handler: async (_req, { node }) => Object.fromEntries(await keyedByNode(node, 'metricsV2'))
  },
  {
    method: 'GET', path: '/monitoring/metrics/:node', name: 'list_node_metrics', role: 'viewer', descr: 'The metrics of a node',
    response: R.counters,
    handler: async ({ params }, { node }) => await onNode(node, params.node, 'metricsV2')
  },
  {
    method: 'GET', path: '/monitoring/stats', name: 'list_stats', role: 'viewer', descr: 'The statistics of every node: a list of objects keyed by node name',
    response: Joi.array().items(V2.keyedByNode(R.counters)),
    handler: async (_req, { node }) => (await keyedByNode(node, 'statsV2')).map(([name, value]) => ({ [name]: value }))
  },
  {
    method: 'GET', path: '/monitoring/stats/:node', name: 'lookup_node_stats', role: 'viewer', descr: 'The statistics of a node',
    response: R.counters,
    handler: async ({ params }, { node }) => await onNode(node, params.node, 'statsV2')
  },

  // --- configuration (§2.14, §2.15) ---
  from('GET /configs', v3('get_all_configs', '/configs/'), { result: byNode<ConfigRecord>('config', configV2), response: V2.keyedByNode(Joi.array().items(V2.config)) }),
  from('GET /nodes/:node/configs', v3('get_all_configs', '/nodes/:node/configs/'), { result: each(configV2), response: Joi.array().items(V2.config) }),
  from('PUT /configs/:app', v3('update_config')),
  from('PUT /nodes/:node/configs/:app', v3('update_node_config')),
  from('GET /nodes/:node/plugin_configs/:plugin', v3('get_plugin_configs'), { result: each<PluginSetting>(({ key, value, desc, required }) => ({ key, value, desc, required })), response: Joi.array().items(V2.pluginSetting) }),
  from('PUT /nodes/:node/plugin_configs/:plugin', v3('update_plugin_configs')),

  // --- administrator users (§2.17, §5.1) ---
  from('GET /users', v3('list_users'), { result: same }),
  from('POST /users', v3('create_user')),
  from('PUT /users/:name', v3('update_user')),
  from('DELETE /users/:name', v3('delete_user')),
  from('POST /auth', v3('auth_user')),
  from('PUT /change_pwd/:username', v3('change_pwd'))
])
