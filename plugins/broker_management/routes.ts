// The v3 route table: one row per operation of SPEC §4.2. The hapi server,
// the `GET /api/v3/` listing and the OpenAPI document are all made from it,
// so a new operation is one more row. Paths are written as EMQ X writes them
// (`:param`, trailing slash as in the SPEC); every `:param` is a required
// string, and `:node` must name this node (else 404). A row marked `paged`
// gets `_page`/`_limit` and its handler's list is paged for it.
import Joi from 'joi'
import type { PluginRouteTable } from './plugin-routes.js'
import { isServiceError, onHolder, type ListMethod, type NodeAnswer, type NodeOutcome, type NodeOperations, type RemoteMethod } from '../../lib/plugin-kit/admin.js'
import { newSecret, type App, type Apps } from './apps.js'
import { ApiError, CODE, badRequest, notFound } from './errors.js'
import * as R from './responses.js'
import { present } from './presenters/by-operation.js'
import { nodeStatsListForm } from './presenters/records-v3.js'
import type { NodeStats } from './presenters/facts.js'
import { ROLES, type Caller, type Role } from './roles.js'
import type { LoginLimit } from './login-limit.js'
import type { CookieSessions } from './cookie-auth.js'
import type { Users } from './users.js'

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE'

export interface ApiContext {
  node: NodeOperations
  /** the routes other plugins add, served under /api/v3 (plugin-routes.ts) */
  pluginRoutes: PluginRouteTable
  apps: Apps
  users: Users
  /** failed logins per source address (`management.login_rate`) */
  logins: LoginLimit
  maxRowLimit: number
  /** the administrators' cookie sessions (cookie-auth.ts); without it only HTTP Basic is accepted */
  cookies?: CookieSessions
  /** the whole table (for the listing) */
  routes: readonly Route[]
  /** the API's OpenAPI document (openapi.ts) */
  openapi: () => unknown
}

export interface RouteRequest {
  params: Record<string, string>
  query: Record<string, unknown>
  payload: unknown
  /** who calls (undefined on a row with `auth: false`) */
  caller?: Caller
  /** the client's address */
  source: string
}

export interface Route {
  method: Method
  path: string
  name: string
  descr: string
  paged?: boolean
  /** true: the result is the whole body, outside the API's envelope (the OpenAPI document) */
  raw?: true
  /** false: no application credentials needed (`POST /auth` checks its own) */
  auth?: false
  /** the least role of a caller (roles.ts); not checked on a row with `auth: false`, which has no caller */
  role: Role
  validate?: { query?: Joi.ObjectSchema, payload?: Joi.ObjectSchema }
  /** the answer's schema (responses.ts); on a `paged` row, one row of the list */
  response: Joi.Schema
  handler: (req: RouteRequest, api: ApiContext) => unknown
}

const OK = 'ok'
/** SPEC §7.1 ties `already_started` to a status above 500 */
const PLUGIN_STATE_STATUS = 503

const bannedKind = Joi.string().valid('client_id', 'username', 'ip_address')
const expired = Joi.alternatives().try(Joi.number().integer().min(0), Joi.string().valid('undefined')).description('unix seconds, or undefined for never')

/** Maps the refusals of the node's operations to statuses. */
function serviceError (e: unknown): never {
  if (!isServiceError(e)) throw e
  switch (e.kind) {
    case 'not_found': throw notFound(e.message)
    case 'bad_value': throw new ApiError(400, { code: CODE.wrongType, message: e.message })
    case 'bad_topic': throw new ApiError(400, { code: CODE.badTopic, message: e.message })
    case 'not_online': throw notOnline()
    // SPEC §7.1: `{message: 'already_started'}` comes with a status above 500; 503: the plugin is not in a state for it
    case 'already_started': throw new ApiError(PLUGIN_STATE_STATUS, { message: 'already_started' }, CODE.alreadyStarted)
    case 'not_started': throw new ApiError(PLUGIN_STATE_STATUS, { message: 'not_started' }, CODE.alreadyStopped)
    // another node of the cluster did not answer in time
    case 'badrpc': throw new ApiError(502, { message: e.message }, CODE.badRpc)
    default: throw e
  }
}

/** Runs an operation of the node, its refusals (ServiceError) turned into the API's (ApiError). */
export async function service<T> (operation: () => T | Promise<T>): Promise<T> {
  try {
    return await operation()
  } catch (err) {
    return serviceError(err)
  }
}

type Remote = RemoteMethod
type Answer = Array<{ node: string, value: unknown }>

/** Every live node's answer, in node order. */
async function everyNode (node: NodeOperations, method: Remote, ...args: unknown[]): Promise<Answer> {
  const answers = await service(async () => await (node.cluster.all as (m: Remote, ...a: unknown[]) => Promise<Answer>)(method, ...args))
  return answers.map((a) => ({ node: a.node, value: present(method, a.value) }))
}

/**
 * A node that did not answer a cluster-wide listing within `cluster.rpc_timeout`
 * (down and not yet known to be): listed in its place, so the live nodes'
 * records still come back (README: "A node that does not answer").
 */
export interface NodeError { node: string, error: 'badrpc', message: string }

export function isNodeError (value: unknown): value is NodeError {
  return typeof value === 'object' && value !== null && (value as { error?: unknown }).error === 'badrpc' && typeof (value as { node?: unknown }).node === 'string'
}

/** Every live node's answer, in node order; a node that did not answer is a NodeError. */
export async function everyListing (node: NodeOperations, method: Remote, ...args: unknown[]): Promise<Array<NodeAnswer<unknown> | NodeError>> {
  const outcomes = await service(async () => await (node.cluster.each as (m: Remote, ...a: unknown[]) => Promise<Array<NodeOutcome<unknown>>>)(method, ...args))
  return outcomes.map((o) => {
    if (o.ok) return { node: o.node, value: present(method, o.value) }
    if (isServiceError(o.error) && o.error.kind === 'badrpc') return { node: o.node, error: 'badrpc', message: o.error.message }
    return serviceError(o.error)
  })
}

/** Every live node's answer as `{node, <field>: answer}` (EMQ X's cluster-wide form of plugins, listeners, configs …). */
async function byNode (node: NodeOperations, method: Remote, field: string): Promise<Array<Record<string, unknown>>> {
  return (await everyListing(node, method)).map((a) => isNodeError(a) ? { ...a } : { node: a.node, [field]: a.value })
}

/** Every live node's answer object with its `node` (brokers, nodes, stats). */
async function objectsByNode (node: NodeOperations, method: Remote, ...args: unknown[]): Promise<Array<Record<string, unknown>>> {
  return (await everyListing(node, method, ...args)).map((a) => isNodeError(a) ? { ...a } : { node: a.node, ...(a.value as object) })
}

/** The rows of every node, as one list; a node that did not answer adds its NodeError at the end. */
async function rows (node: NodeOperations, method: ListMethod, ...args: string[]): Promise<unknown[]> {
  const answers = await everyListing(node, method, ...args)
  return [...answers.flatMap((a) => isNodeError(a) ? [] : a.value as unknown[]), ...answers.filter(isNodeError)]
}

/** The answer of the node named in the path. */
export async function onNode (node: NodeOperations, name: string, method: Remote, ...args: unknown[]): Promise<unknown> {
  return present(method, await service(async () => await (node.cluster.on as (n: string, m: Remote, ...a: unknown[]) => Promise<unknown>)(name, method, ...args)))
}

/** A name that is not a live node of the cluster is a failed call to that node (404, v2 code 101). */
export async function assertLiveNode (node: NodeOperations, name: string): Promise<void> {
  if (name !== node.name && !(await node.cluster.nodes()).includes(name)) throw new ApiError(404, { message: 'node not found' }, CODE.badRpc)
}

/** An operation only the node holding the client can do: true when one did. */
async function holder (node: NodeOperations, method: 'kick' | 'cleanAclCache' | 'subscribe' | 'unsubscribe', ...args: unknown[]): Promise<boolean> {
  return await service(async () => await (onHolder as (c: NodeOperations['cluster'], m: string, ...a: unknown[]) => Promise<boolean>)(node.cluster, method, ...args))
}

const notOnline = (): ApiError => new ApiError(404, { code: CODE.notOnline, message: 'client not online' })

const role = Joi.string().valid(...ROLES).description('administrator (every operation) or viewer (reads only)')

const qos = Joi.number().integer().valid(0, 1, 2)
/** `{key, value}` of PUT /configs/:app and /nodes/:node/configs/:app (§2.14) */
// next_start: store a `restart` setting for the next start (it is refused otherwise)
const configItem = Joi.object({ key: Joi.string().required(), value: Joi.string().allow('').required(), next_start: Joi.boolean().default(false) })
const nonEmpty = Joi.string().min(1)
const credential = Joi.string().allow('').required()

/** 104 when a user name or password is empty. */
function filledIn (...values: string[]): void {
  if (values.some((v) => v === '')) throw badRequest(CODE.emptyCredentials, 'user name and password must not be empty')
}

async function existingUser (users: Users, username: string): Promise<void> {
  if (await users.get(username) === undefined) throw new ApiError(404, { code: CODE.noSuchUser, message: `no user ${username}` })
}

async function existingApp (apps: Apps, appId: string): Promise<App> {
  const app = await apps.get(appId)
  if (app === undefined) throw notFound(`no application ${appId}`)
  return app
}

export const routes: readonly Route[] = Object.freeze([
  // --- the API itself ---
  {
    method: 'GET', path: '/', name: 'list_apis', role: 'viewer', descr: 'List every operation of the API',
    response: R.apiListing,
    handler: (_req, { routes }) => routes.map(({ name, method, path, descr }) => ({ name, method, path, descr }))
  },
  {
    method: 'GET', path: '/openapi.json', name: 'openapi', role: 'viewer', descr: 'The OpenAPI 3.1 document of the API', raw: true,
    response: Joi.object().unknown(true).description('an OpenAPI 3.1 document'),
    handler: (_req, { openapi }) => openapi()
  },

  // --- brokers and nodes (§2.7, §2.8) ---
  {
    method: 'GET', path: '/brokers/', name: 'list_brokers', role: 'viewer', descr: 'A list of brokers in the cluster',
    response: Joi.array().items(R.orNodeError(R.brokerInfo.keys({ node: R.text.required() }))),
    handler: async (_req, { node }) => await objectsByNode(node, 'brokerInfo')
  },
  {
    method: 'GET', path: '/brokers/:node', name: 'lookup_broker', role: 'viewer', descr: 'Get broker info of a node',
    response: R.brokerInfo,
    handler: async ({ params }, { node }) => await onNode(node, params.node, 'brokerInfo')
  },
  {
    method: 'GET', path: '/nodes/', name: 'list_nodes', role: 'viewer', descr: 'A list of nodes in the cluster',
    response: Joi.array().items(R.orNodeError(R.nodeStatsListed)),
    handler: async (_req, { node }) => (await objectsByNode(node, 'nodeStats')).map((n) => isNodeError(n) ? n : nodeStatsListForm(n as unknown as NodeStats))
  },
  {
    method: 'GET', path: '/nodes/:node', name: 'lookup_node', role: 'viewer', descr: 'Lookup a node in the cluster',
    response: R.nodeStats,
    handler: async ({ params }, { node }) => await onNode(node, params.node, 'nodeStats')
  },

  // --- connections (§2.1) ---
  {
    method: 'GET', path: '/connections/', name: 'list_connections', role: 'viewer', descr: 'A list of connections in the cluster', paged: true,
    response: R.orNodeError(R.connection),
    handler: async (_req, { node }) => await rows(node, 'connections')
  },
  {
    method: 'GET', path: '/nodes/:node/connections/', name: 'list_node_connections', role: 'viewer', descr: 'A list of connections on a node', paged: true,
    response: R.connection,
    handler: async ({ params }, { node }) => await onNode(node, params.node, 'connections')
  },
  {
    method: 'GET', path: '/connections/:clientid', name: 'lookup_connections', role: 'viewer', descr: 'Lookup a connection in the cluster',
    response: Joi.array().items(R.orNodeError(R.connection)),
    handler: async ({ params }, { node }) => await rows(node, 'connection', params.clientid)
  },
  {
    method: 'GET', path: '/nodes/:node/connections/:clientid', name: 'lookup_node_connection', role: 'viewer', descr: 'Lookup a connection on a node',
    response: Joi.array().items(R.connection),
    handler: async ({ params }, { node }) => await onNode(node, params.node, 'connection', params.clientid)
  },
  {
    method: 'DELETE', path: '/connections/:clientid', name: 'kickout_connection', role: 'administrator', descr: 'Kick out a connection',
    response: R.ok,
    handler: async ({ params }, { node }) => {
      if (!await holder(node, 'kick', params.clientid)) throw notOnline()
      return OK
    }
  },
  {
    method: 'DELETE', path: '/connections/:clientid/acl/:topic', name: 'clean_acl_cache', role: 'administrator', descr: 'Clean the ACL cache of a connection for a topic',
    response: R.ok,
    handler: async ({ params }, { node }) => {
      if (!await holder(node, 'cleanAclCache', params.clientid, params.topic)) throw notOnline()
      return OK
    }
  },

  // --- sessions (§2.3) ---
  {
    method: 'GET', path: '/sessions/', name: 'list_sessions', role: 'viewer', descr: 'A list of sessions in the cluster', paged: true,
    response: R.orNodeError(R.session),
    handler: async (_req, { node }) => await rows(node, 'sessions')
  },
  {
    method: 'GET', path: '/nodes/:node/sessions/', name: 'list_node_sessions', role: 'viewer', descr: 'A list of sessions on a node', paged: true,
    response: R.session,
    handler: async ({ params }, { node }) => await onNode(node, params.node, 'sessions')
  },
  {
    method: 'GET', path: '/sessions/:clientid', name: 'lookup_session', role: 'viewer', descr: 'Lookup a session in the cluster',
    response: Joi.array().items(R.orNodeError(R.session)),
    handler: async ({ params }, { node }) => await rows(node, 'session', params.clientid)
  },
  {
    method: 'GET', path: '/nodes/:node/sessions/:clientid', name: 'lookup_node_session', role: 'viewer', descr: 'Lookup a session on a node',
    response: Joi.array().items(R.session),
    handler: async ({ params }, { node }) => await onNode(node, params.node, 'session', params.clientid)
  },

  // --- subscriptions (§2.5) ---
  {
    method: 'GET', path: '/subscriptions/', name: 'list_subscriptions', role: 'viewer', descr: 'A list of subscriptions in the cluster', paged: true,
    response: R.orNodeError(R.subscription),
    handler: async (_req, { node }) => await rows(node, 'subscriptions')
  },
  {
    method: 'GET', path: '/subscriptions/:clientid', name: 'lookup_client_subscriptions', role: 'viewer', descr: 'A list of subscriptions of a client',
    response: Joi.array().items(R.orNodeError(R.subscription)),
    handler: async ({ params }, { node }) => await rows(node, 'clientSubscriptions', params.clientid)
  },
  {
    method: 'GET', path: '/nodes/:node/subscriptions/', name: 'list_node_subscriptions', role: 'viewer', descr: 'A list of subscriptions on a node', paged: true,
    response: R.subscription,
    handler: async ({ params }, { node }) => await onNode(node, params.node, 'subscriptions')
  },
  {
    method: 'GET', path: '/nodes/:node/subscriptions/:clientid', name: 'lookup_client_subscriptions_with_node', role: 'viewer', descr: 'A list of subscriptions of a client on a node',
    response: Joi.array().items(R.subscription),
    handler: async ({ params }, { node }) => await onNode(node, params.node, 'clientSubscriptions', params.clientid)
  },

  // --- routes (§2.6) ---
  {
    method: 'GET', path: '/routes/', name: 'list_routes', role: 'viewer', descr: 'A list of routes in the cluster', paged: true,
    response: R.orNodeError(R.route),
    handler: async (_req, { node }) => await rows(node, 'routes')
  },
  {
    method: 'GET', path: '/routes/:topic', name: 'lookup_routes', role: 'viewer', descr: 'Lookup the routes of a topic',
    response: Joi.array().items(R.orNodeError(R.route)),
    handler: async ({ params }, { node }) => await rows(node, 'route', params.topic)
  },

  // --- publish, subscribe, unsubscribe (§4.3) ---
  {
    method: 'POST', path: '/mqtt/publish', name: 'mqtt_publish', role: 'administrator', descr: 'Publish a MQTT message',
    response: R.codeZero,
    validate: {
      payload: Joi.object({
        topic: nonEmpty.required(),
        payload: Joi.string().allow('').default(''),
        qos: qos.default(0),
        retain: Joi.boolean().default(false),
        client_id: Joi.string().allow('').default('http').description('the publisher named in the message (default http)')
      })
    },
    handler: async ({ payload }, { node }) => {
      const body = payload as { topic: string, payload: string, qos: 0 | 1 | 2, retain: boolean, client_id: string }
      await service(async () => await node.publish({ topic: body.topic, payload: body.payload, qos: body.qos, retain: body.retain, clientId: body.client_id }))
      return { code: 0 }
    }
  },
  {
    method: 'POST', path: '/mqtt/subscribe', name: 'mqtt_subscribe', role: 'administrator', descr: 'Subscribe a connected client to a topic',
    response: R.codeZero,
    validate: { payload: Joi.object({ topic: nonEmpty.required(), qos: qos.default(0), client_id: nonEmpty.required() }) },
    handler: async ({ payload }, { node }) => {
      const body = payload as { topic: string, qos: 0 | 1 | 2, client_id: string }
      if (!await holder(node, 'subscribe', body.client_id, body.topic, body.qos)) throw notOnline()
      return { code: 0 }
    }
  },
  {
    method: 'POST', path: '/mqtt/unsubscribe', name: 'mqtt_unsubscribe', role: 'administrator', descr: 'Unsubscribe a connected client from a topic',
    response: R.codeZero,
    validate: {
      payload: Joi.object({
        topic: nonEmpty.required(),
        client_id: nonEmpty.required(),
        // accepted and ignored, as EMQ X's example sends them
        payload: Joi.string().allow(''),
        qos,
        retain: Joi.boolean()
      })
    },
    handler: async ({ payload }, { node }) => {
      const body = payload as { topic: string, client_id: string }
      if (!await holder(node, 'unsubscribe', body.client_id, body.topic)) throw notOnline()
      return { code: 0 }
    }
  },

  // --- plugins (§2.13, §3) ---
  {
    method: 'GET', path: '/plugins/', name: 'list_all_plugins', role: 'viewer', descr: 'A list of plugins in the cluster',
    response: R.byNode('plugins', Joi.array().items(R.plugin)),
    handler: async (_req, { node }) => await byNode(node, 'plugins', 'plugins')
  },
  {
    method: 'GET', path: '/nodes/:node/plugins/', name: 'list_node_plugins', role: 'viewer', descr: 'A list of plugins on a node',
    response: Joi.array().items(R.plugin),
    handler: async ({ params }, { node }) => await onNode(node, params.node, 'plugins')
  },
  {
    method: 'PUT', path: '/nodes/:node/plugins/:plugin/load', name: 'load_plugin', role: 'administrator', descr: 'Load a plugin',
    response: R.ok,
    handler: async ({ params }, { node }) => {
      await onNode(node, params.node, 'loadPlugin', params.plugin)
      return OK
    }
  },
  {
    method: 'PUT', path: '/nodes/:node/plugins/:plugin/unload', name: 'unload_plugin', role: 'administrator', descr: 'Unload a plugin',
    response: R.ok,
    handler: async ({ params }, { node }) => {
      await onNode(node, params.node, 'unloadPlugin', params.plugin)
      return OK
    }
  },

  // --- listeners (§2.10) ---
  {
    method: 'GET', path: '/listeners/', name: 'list_listeners', role: 'viewer', descr: 'A list of listeners in the cluster',
    response: R.byNode('listeners', Joi.array().items(R.listener)),
    handler: async (_req, { node }) => await byNode(node, 'listeners', 'listeners')
  },
  {
    method: 'GET', path: '/nodes/:node/listeners', name: 'list_node_listeners', role: 'viewer', descr: 'A list of listeners on a node',
    response: Joi.array().items(R.listener),
    handler: async ({ params }, { node }) => await onNode(node, params.node, 'listeners')
  },

  // --- configuration (§2.14) ---
  {
    method: 'GET', path: '/configs/', name: 'get_all_configs', role: 'viewer', descr: 'Get all configs',
    response: R.byNode('config', Joi.array().items(R.config)),
    handler: async (_req, { node }) => await byNode(node, 'configs', 'config')
  },
  {
    method: 'GET', path: '/nodes/:node/configs/', name: 'get_all_configs', role: 'viewer', descr: 'Get all configs of a node',
    response: Joi.array().items(R.config),
    handler: async ({ params }, { node }) => await onNode(node, params.node, 'configs')
  },
  {
    method: 'PUT', path: '/configs/:app', name: 'update_config', role: 'administrator', descr: 'Update a config item on every node',
    response: R.ok,
    validate: { payload: configItem },
    handler: async ({ params, payload }, { node }) => {
      const { key, value, next_start: nextStart } = payload as { key: string, value: string, next_start: boolean }
      await everyNode(node, 'setConfig', params.app, key, value, 'management api', nextStart)
      return OK
    }
  },
  {
    method: 'PUT', path: '/nodes/:node/configs/:app', name: 'update_node_config', role: 'administrator', descr: 'Update a config item on a node',
    response: R.ok,
    validate: { payload: configItem },
    handler: async ({ params, payload }, { node }) => {
      const { key, value, next_start: nextStart } = payload as { key: string, value: string, next_start: boolean }
      await onNode(node, params.node, 'setConfig', params.app, key, value, 'management api', nextStart)
      return OK
    }
  },

  // --- plugin settings (§2.15) ---
  {
    method: 'GET', path: '/nodes/:node/plugin_configs/:plugin', name: 'get_plugin_configs', role: 'administrator', descr: 'Get the settings of a plugin',
    response: Joi.array().items(R.pluginSetting),
    handler: async ({ params }, { node }) => await onNode(node, params.node, 'pluginSettings', params.plugin)
  },
  {
    method: 'PUT', path: '/nodes/:node/plugin_configs/:plugin', name: 'update_plugin_configs', role: 'administrator', descr: 'Update the settings of a plugin (reloads it when active)',
    response: R.ok,
    validate: { payload: Joi.object().pattern(Joi.string(), Joi.string().allow('', null)).min(1).description('setting key → value; null resets the key to its default') },
    handler: async ({ params, payload }, { node }) => {
      // this plugin reloading itself stops the server answering: answer first
      const reloadLater = params.plugin === 'broker_management' && params.node === node.name
      await onNode(node, params.node, 'setPluginSettings', params.plugin, payload as Record<string, string | null>, { reloadLater })
      return OK
    }
  },

  // --- metrics and statistics (§2.11, §2.12) ---
  {
    method: 'GET', path: '/metrics/', name: 'list_all_metrics', role: 'viewer', descr: 'A list of metrics of all nodes in the cluster',
    response: R.byNode('metrics', R.counters),
    handler: async (_req, { node }) => await byNode(node, 'metrics', 'metrics')
  },
  {
    method: 'GET', path: '/nodes/:node/metrics/', name: 'list_node_metrics', role: 'viewer', descr: 'A list of metrics of a node',
    response: R.counters,
    handler: async ({ params }, { node }) => await onNode(node, params.node, 'metrics')
  },
  {
    method: 'GET', path: '/stats/', name: 'list_stats', role: 'viewer', descr: 'A list of stats of all nodes in the cluster',
    response: Joi.array().items(R.orNodeError(R.counters.keys({ node: R.text.required() }))),
    handler: async (_req, { node }) => await objectsByNode(node, 'stats')
  },
  {
    method: 'GET', path: '/nodes/:node/stats/', name: 'lookup_node_stats', role: 'viewer', descr: 'A list of stats of a node',
    response: R.counters,
    handler: async ({ params }, { node }) => await onNode(node, params.node, 'stats')
  },

  // --- graceful drain (issue 10; EMQ X 4 had none) ---
  {
    method: 'PUT', path: '/nodes/:node/drain', name: 'drain_node', role: 'administrator', descr: 'Drain a node: stop accepting connections, then disconnect its clients at `rate` per second (default node.drain_rate; MQTT 5: DISCONNECT 0x9D)',
    response: R.drain,
    handler: async ({ params, payload }, { node }) => {
      const checked = Joi.object({ rate: Joi.number().integer().min(1) }).allow(null).validate(payload)
      if (checked.error !== undefined) throw new ApiError(400, { code: CODE.wrongType, message: checked.error.message })
      const rate = (checked.value as { rate?: number } | null)?.rate
      return await onNode(node, params.node, 'drain', rate)
    }
  },
  {
    method: 'GET', path: '/nodes/:node/drain', name: 'drain_status', role: 'viewer', descr: 'How far the drain of a node is',
    response: R.drain,
    handler: async ({ params }, { node }) => await onNode(node, params.node, 'drainStatus')
  },

  // --- alarms (§2.18) ---
  {
    method: 'GET', path: '/alarms/', name: 'get_all_alarms', role: 'viewer', descr: 'Get the present alarms of all nodes in the cluster',
    response: R.byNode('alarms', Joi.array().items(R.alarm)),
    handler: async (_req, { node }) => await byNode(node, 'alarms', 'alarms')
  },
  {
    method: 'GET', path: '/alarms/:node', name: 'get_alarms', role: 'viewer', descr: 'Get the present alarms of a node',
    response: Joi.array().items(R.alarm),
    handler: async ({ params }, { node }) => await onNode(node, params.node, 'alarms')
  },
  {
    method: 'GET', path: '/alarms/history/', name: 'get_all_alarm_history', role: 'viewer', descr: 'Get the cleared alarms of all nodes in the cluster (the newest 1000 of each node)',
    response: R.byNode('alarms', Joi.array().items(R.clearedAlarm)),
    handler: async (_req, { node }) => await byNode(node, 'alarmHistory', 'alarms')
  },
  {
    method: 'GET', path: '/alarms/history/:node', name: 'get_alarm_history', role: 'viewer', descr: 'Get the cleared alarms of a node (the newest 1000), oldest first',
    response: Joi.array().items(R.clearedAlarm),
    handler: async ({ params }, { node }) => await onNode(node, params.node, 'alarmHistory')
  },

  // --- banned (§2.16) ---
  {
    method: 'GET', path: '/banned/', name: 'list_banned', role: 'viewer', descr: 'List banned entries', paged: true,
    response: R.banned,
    // banned entries are kept where every node reads them; each node's list is the same
    handler: (_req, { node }) => node.banned()
  },
  {
    method: 'POST', path: '/banned/', name: 'create_banned', role: 'administrator', descr: 'Create a banned entry',
    response: R.banned,
    validate: {
      payload: Joi.object({
        who: Joi.string().min(1).required(),
        as: bannedKind.required(),
        reason: Joi.string().allow(''),
        desc: Joi.string().allow(''),
        by: Joi.string().allow(''),
        until: Joi.number().integer().min(0).description('unix seconds; default now + 5 minutes')
      })
    },
    handler: async ({ payload }, { node }) => {
      const request = payload as Parameters<NodeOperations['ban']>[0]
      // one `until` for every node, then each node records the entry it enforces
      const until = request.until ?? Math.floor(Date.now() / 1000) + 300
      return (await everyNode(node, 'ban', { ...request, until }))[0].value
    }
  },
  {
    method: 'DELETE', path: '/banned/:who', name: 'delete_banned', role: 'administrator', descr: 'Delete a banned entry',
    response: R.ok,
    validate: { query: Joi.object({ as: bannedKind.required() }) },
    handler: async ({ params, query }, { node }) => {
      const removed = await everyNode(node, 'unban', query.as as Parameters<NodeOperations['unban']>[0], params.who)
      if (!removed.some((a) => a.value === true)) throw notFound(`no banned entry ${String(query.as)} ${params.who}`)
      return OK
    }
  },

  // --- applications (§5.1) ---
  {
    method: 'GET', path: '/apps/', name: 'list_apps', role: 'viewer', descr: 'List applications',
    response: Joi.array().items(R.app),
    handler: async (_req, { apps }) => await apps.list()
  },
  {
    method: 'POST', path: '/apps/', name: 'add_app', role: 'administrator', descr: 'Add an application',
    response: R.secret,
    validate: {
      payload: Joi.object({
        app_id: Joi.string().min(1).required(),
        name: Joi.string().required(),
        secret: Joi.string().allow('').description('generated when empty'),
        desc: Joi.string().allow(''),
        status: Joi.boolean(),
        expired,
        role: role.default('administrator')
      })
    },
    handler: async ({ payload }, { apps }) => {
      const body = payload as Partial<App> & { app_id: string, name: string, secret?: string, role: Role }
      if (await apps.get(body.app_id) !== undefined) throw new ApiError(400, { code: CODE.unknown, message: 'app already exists' })
      const secret = body.secret === undefined || body.secret === '' ? newSecret() : body.secret
      await apps.add({ app_id: body.app_id, name: body.name, desc: body.desc ?? '', status: body.status ?? true, expired: body.expired ?? 'undefined', role: body.role }, secret)
      // the only time the secret is shown: only its hash is kept
      return { secret }
    }
  },
  {
    method: 'GET', path: '/apps/:appid', name: 'lookup_app', role: 'viewer', descr: 'Lookup an application (its secret is shown only at creation)',
    response: R.app,
    handler: async ({ params }, { apps }) => await existingApp(apps, params.appid)
  },
  {
    method: 'PUT', path: '/apps/:appid', name: 'update_app', role: 'administrator', descr: 'Update an application',
    response: R.ok,
    validate: { payload: Joi.object({ name: Joi.string(), desc: Joi.string().allow(''), status: Joi.boolean(), expired, role }) },
    handler: async ({ params, payload }, { apps }) => {
      if (!await apps.update(params.appid, payload as Partial<App>)) throw notFound(`no application ${params.appid}`)
      return OK
    }
  },
  {
    method: 'DELETE', path: '/apps/:appid', name: 'del_app', role: 'administrator', descr: 'Delete an application',
    response: R.ok,
    handler: async ({ params }, { apps }) => {
      if (!await apps.remove(params.appid)) throw notFound(`no application ${params.appid}`)
      return OK
    }
  },

  // --- administrator users (§2.17, §5.1) ---
  {
    method: 'GET', path: '/users/', name: 'list_users', role: 'viewer', descr: 'List administrator users',
    response: Joi.array().items(R.user),
    handler: async (_req, { users }) => await users.list()
  },
  {
    method: 'POST', path: '/users/', name: 'create_user', role: 'administrator', descr: 'Create an administrator user',
    response: R.ok,
    validate: { payload: Joi.object({ username: credential, password: credential, tags: Joi.string().allow('').default('') }) },
    handler: async ({ payload }, { users }) => {
      const { username, password, tags } = payload as { username: string, password: string, tags: string }
      filledIn(username, password)
      if (await users.get(username) !== undefined) throw badRequest(CODE.userExists, `user ${username} already exists`)
      await users.add(username, password, tags)
      return OK
    }
  },
  {
    method: 'PUT', path: '/users/:name', name: 'update_user', role: 'administrator', descr: 'Update the tags of an administrator user',
    response: R.ok,
    validate: { payload: Joi.object({ tags: Joi.string().allow('').required() }) },
    handler: async ({ params, payload }, { users }) => {
      if (!await users.setTags(params.name, (payload as { tags: string }).tags)) throw new ApiError(404, { code: CODE.noSuchUser, message: `no user ${params.name}` })
      return OK
    }
  },
  {
    method: 'DELETE', path: '/users/:name', name: 'delete_user', role: 'administrator', descr: 'Delete an administrator user',
    response: R.ok,
    handler: async ({ params }, { users }) => {
      if (params.name === users.defaultUser.login) throw new ApiError(403, { code: CODE.adminUser, message: 'the admin user cannot be deleted' })
      if (!await users.remove(params.name)) throw new ApiError(404, { code: CODE.noSuchUser, message: `no user ${params.name}` })
      return OK
    }
  },
  {
    method: 'POST', path: '/auth', name: 'auth_user', role: 'administrator', descr: 'Check the user name and password of an administrator user', auth: false,
    response: R.ok,
    validate: { payload: Joi.object({ username: credential, password: credential }) },
    handler: async ({ payload, source }, { users, logins }) => {
      const { username, password } = payload as { username: string, password: string }
      filledIn(username, password)
      if (!await logins.check(source, async () => await users.verify(username, password))) throw badRequest(CODE.wrongCredentials, 'wrong user name or password')
      return OK
    }
  },
  {
    method: 'PUT', path: '/change_pwd/:username', name: 'change_pwd', role: 'administrator', descr: 'Change the password of an administrator user',
    response: R.ok,
    validate: { payload: Joi.object({ old_pwd: credential, new_pwd: credential }) },
    handler: async ({ params, payload, source }, { users, logins }) => {
      const { old_pwd: oldPassword, new_pwd: newPassword } = payload as { old_pwd: string, new_pwd: string }
      filledIn(oldPassword, newPassword)
      await existingUser(users, params.username)
      if (!await logins.check(source, async () => await users.verify(params.username, oldPassword))) throw badRequest(CODE.wrongOldPassword, 'the old password is wrong')
      await users.setPassword(params.username, newPassword)
      return OK
    }
  }
])
