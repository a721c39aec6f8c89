// The v3 route table: one row per operation of SPEC §4.2. The hapi server,
// the `GET /api/v3/` listing and the OpenAPI document are all made from it,
// so a new operation is one more row. Paths are written as EMQ X writes them
// (`:param`, trailing slash as in the SPEC); every `:param` is a required
// string, and `:node` must name this node (else 404). A row marked `paged`
// gets `_page`/`_limit` and its handler's list is paged for it.
import Joi from 'joi'
import type { NodeView } from '../../lib/plugins/contract.js'
import type { ServiceError } from '../../lib/service/node-service.js'
import { newSecret, type App, type Apps } from './apps.js'
import { ApiError, CODE, notFound } from './errors.js'
import { openapi } from './openapi.js'

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE'

export interface ApiContext {
  node: NodeView
  apps: Apps
  maxRowLimit: number
  /** the whole table (for the listing and the OpenAPI document) */
  routes: readonly Route[]
}

export interface RouteRequest {
  params: Record<string, string>
  query: Record<string, unknown>
  payload: unknown
}

export interface Route {
  method: Method
  path: string
  name: string
  descr: string
  paged?: boolean
  validate?: { query?: Joi.ObjectSchema, payload?: Joi.ObjectSchema }
  handler: (req: RouteRequest, api: ApiContext) => unknown
}

const OK = 'ok'

const bannedKind = Joi.string().valid('client_id', 'username', 'ip_address')
const expired = Joi.alternatives().try(Joi.number().integer().min(0), Joi.string().valid('undefined')).description('unix seconds, or undefined for never')

/** Maps the node service's refusals to statuses. */
function serviceError (err: unknown): never {
  const e = err as ServiceError
  if (e?.name !== 'ServiceError') throw err
  switch (e.kind) {
    case 'not_found': throw notFound(e.message)
    case 'bad_value': throw new ApiError(400, { code: CODE.wrongType, message: e.message })
    // SPEC §7.1 names the body; 409 Conflict: the plugin is already in the asked state
    case 'already_started': throw new ApiError(409, { message: 'already_started' })
    case 'not_started': throw new ApiError(409, { message: 'not_started' })
    default: throw err
  }
}

async function service<T> (operation: () => T | Promise<T>): Promise<T> {
  try {
    return await operation()
  } catch (err) {
    return serviceError(err)
  }
}

const notOnline = (): ApiError => new ApiError(404, { code: CODE.notOnline, message: 'client not online' })

function publicApp ({ secret: _secret, ...app }: App): Omit<App, 'secret'> {
  return app
}

async function existingApp (apps: Apps, appId: string): Promise<App> {
  const app = await apps.get(appId)
  if (app === undefined) throw notFound(`no application ${appId}`)
  return app
}

export const routes: readonly Route[] = [
  // --- the API itself ---
  {
    method: 'GET', path: '/', name: 'list_apis', descr: 'List every operation of the API',
    handler: (_req, { routes }) => routes.map(({ name, method, path, descr }) => ({ name, method, path, descr }))
  },
  {
    method: 'GET', path: '/openapi.json', name: 'openapi', descr: 'The OpenAPI 3 document of the API',
    handler: (_req, { routes }) => openapi(routes)
  },

  // --- brokers and nodes (§2.7, §2.8) ---
  {
    method: 'GET', path: '/brokers/', name: 'list_brokers', descr: 'A list of brokers in the cluster',
    handler: (_req, { node }) => [{ ...node.brokerInfo(), node: node.name }]
  },
  {
    method: 'GET', path: '/brokers/:node', name: 'lookup_broker', descr: 'Get broker info of a node',
    handler: (_req, { node }) => node.brokerInfo()
  },
  {
    method: 'GET', path: '/nodes/', name: 'list_nodes', descr: 'A list of nodes in the cluster',
    handler: async (_req, { node }) => [{ ...await node.nodeStats(true), node: node.name }]
  },
  {
    method: 'GET', path: '/nodes/:node', name: 'lookup_node', descr: 'Lookup a node in the cluster',
    handler: async (_req, { node }) => await node.nodeStats()
  },

  // --- connections (§2.1) ---
  {
    method: 'GET', path: '/connections/', name: 'list_connections', descr: 'A list of connections in the cluster', paged: true,
    handler: (_req, { node }) => node.connections()
  },
  {
    method: 'GET', path: '/nodes/:node/connections/', name: 'list_node_connections', descr: 'A list of connections on a node', paged: true,
    handler: (_req, { node }) => node.connections()
  },
  {
    method: 'GET', path: '/connections/:clientid', name: 'lookup_connections', descr: 'Lookup a connection in the cluster',
    handler: ({ params }, { node }) => node.connection(params.clientid)
  },
  {
    method: 'GET', path: '/nodes/:node/connections/:clientid', name: 'lookup_node_connection', descr: 'Lookup a connection on a node',
    handler: ({ params }, { node }) => node.connection(params.clientid)
  },
  {
    method: 'DELETE', path: '/connections/:clientid', name: 'kickout_connection', descr: 'Kick out a connection',
    handler: ({ params }, { node }) => {
      if (!node.kick(params.clientid)) throw notOnline()
      return OK
    }
  },
  {
    method: 'DELETE', path: '/connections/:clientid/acl/:topic', name: 'clean_acl_cache', descr: 'Clean the ACL cache of a connection for a topic',
    handler: ({ params }, { node }) => {
      if (!node.cleanAclCache(params.clientid, params.topic)) throw notOnline()
      return OK
    }
  },

  // --- sessions (§2.3) ---
  {
    method: 'GET', path: '/sessions/', name: 'list_sessions', descr: 'A list of sessions in the cluster', paged: true,
    handler: (_req, { node }) => node.sessions()
  },
  {
    method: 'GET', path: '/nodes/:node/sessions/', name: 'list_node_sessions', descr: 'A list of sessions on a node', paged: true,
    handler: (_req, { node }) => node.sessions()
  },
  {
    method: 'GET', path: '/sessions/:clientid', name: 'lookup_session', descr: 'Lookup a session in the cluster',
    handler: ({ params }, { node }) => node.session(params.clientid)
  },
  {
    method: 'GET', path: '/nodes/:node/sessions/:clientid', name: 'lookup_node_session', descr: 'Lookup a session on a node',
    handler: ({ params }, { node }) => node.session(params.clientid)
  },

  // --- subscriptions (§2.5) ---
  {
    method: 'GET', path: '/subscriptions/', name: 'list_subscriptions', descr: 'A list of subscriptions in the cluster', paged: true,
    handler: (_req, { node }) => node.subscriptions()
  },
  {
    method: 'GET', path: '/subscriptions/:clientid', name: 'lookup_client_subscriptions', descr: 'A list of subscriptions of a client',
    handler: ({ params }, { node }) => node.clientSubscriptions(params.clientid)
  },
  {
    method: 'GET', path: '/nodes/:node/subscriptions/', name: 'list_node_subscriptions', descr: 'A list of subscriptions on a node', paged: true,
    handler: (_req, { node }) => node.subscriptions()
  },
  {
    method: 'GET', path: '/nodes/:node/subscriptions/:clientid', name: 'lookup_client_subscriptions_with_node', descr: 'A list of subscriptions of a client on a node',
    handler: ({ params }, { node }) => node.clientSubscriptions(params.clientid)
  },

  // --- routes (§2.6) ---
  {
    method: 'GET', path: '/routes/', name: 'list_routes', descr: 'A list of routes in the cluster', paged: true,
    handler: (_req, { node }) => node.routes()
  },
  {
    method: 'GET', path: '/routes/:topic', name: 'lookup_routes', descr: 'Lookup the routes of a topic',
    handler: ({ params }, { node }) => node.route(params.topic)
  },

  // --- plugins (§2.13, §3) ---
  {
    method: 'GET', path: '/plugins/', name: 'list_all_plugins', descr: 'A list of plugins in the cluster',
    handler: async (_req, { node }) => [{ node: node.name, plugins: await node.plugins() }]
  },
  {
    method: 'GET', path: '/nodes/:node/plugins/', name: 'list_node_plugins', descr: 'A list of plugins on a node',
    handler: async (_req, { node }) => await node.plugins()
  },
  {
    method: 'PUT', path: '/nodes/:node/plugins/:plugin/load', name: 'load_plugin', descr: 'Load a plugin',
    handler: async ({ params }, { node }) => {
      await service(async () => await node.loadPlugin(params.plugin))
      return OK
    }
  },
  {
    method: 'PUT', path: '/nodes/:node/plugins/:plugin/unload', name: 'unload_plugin', descr: 'Unload a plugin',
    handler: async ({ params }, { node }) => {
      await service(async () => await node.unloadPlugin(params.plugin))
      return OK
    }
  },

  // --- listeners (§2.10) ---
  {
    method: 'GET', path: '/listeners/', name: 'list_listeners', descr: 'A list of listeners in the cluster',
    handler: (_req, { node }) => [{ node: node.name, listeners: node.listeners() }]
  },
  {
    method: 'GET', path: '/nodes/:node/listeners', name: 'list_node_listeners', descr: 'A list of listeners on a node',
    handler: (_req, { node }) => node.listeners()
  },

  // --- configuration (§2.14) ---
  {
    method: 'GET', path: '/configs/', name: 'get_all_configs', descr: 'Get all configs',
    handler: (_req, { node }) => [{ node: node.name, config: node.configs() }]
  },
  {
    method: 'GET', path: '/nodes/:node/configs/', name: 'get_all_configs', descr: 'Get all configs of a node',
    handler: (_req, { node }) => node.configs()
  },
  {
    method: 'PUT', path: '/configs/:app', name: 'update_config', descr: 'Update a config item on every node',
    validate: { payload: Joi.object({ key: Joi.string().required(), value: Joi.string().allow('').required() }) },
    handler: async ({ params, payload }, { node }) => {
      const { key, value } = payload as { key: string, value: string }
      await service(() => node.setConfig(params.app, key, value))
      return OK
    }
  },
  {
    method: 'PUT', path: '/nodes/:node/configs/:app', name: 'update_node_config', descr: 'Update a config item on a node',
    validate: { payload: Joi.object({ key: Joi.string().required(), value: Joi.string().allow('').required() }) },
    handler: async ({ params, payload }, { node }) => {
      const { key, value } = payload as { key: string, value: string }
      await service(() => node.setConfig(params.app, key, value))
      return OK
    }
  },

  // --- banned (§2.16) ---
  {
    method: 'GET', path: '/banned/', name: 'list_banned', descr: 'List banned entries', paged: true,
    handler: (_req, { node }) => node.banned()
  },
  {
    method: 'POST', path: '/banned/', name: 'create_banned', descr: 'Create a banned entry',
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
    handler: async ({ payload }, { node }) => await service(async () => await node.ban(payload as Parameters<NodeView['ban']>[0]))
  },
  {
    method: 'DELETE', path: '/banned/:who', name: 'delete_banned', descr: 'Delete a banned entry',
    validate: { query: Joi.object({ as: bannedKind.required() }) },
    handler: async ({ params, query }, { node }) => {
      if (!await node.unban(query.as as Parameters<NodeView['unban']>[0], params.who)) throw notFound(`no banned entry ${String(query.as)} ${params.who}`)
      return OK
    }
  },

  // --- applications (§5.1) ---
  {
    method: 'GET', path: '/apps/', name: 'list_apps', descr: 'List applications',
    handler: async (_req, { apps }) => (await apps.list()).map(publicApp)
  },
  {
    method: 'POST', path: '/apps/', name: 'add_app', descr: 'Add an application',
    validate: {
      payload: Joi.object({
        app_id: Joi.string().min(1).required(),
        name: Joi.string().required(),
        secret: Joi.string().allow('').description('generated when empty'),
        desc: Joi.string().allow(''),
        status: Joi.boolean(),
        expired
      })
    },
    handler: async ({ payload }, { apps }) => {
      const body = payload as Partial<App> & { app_id: string, name: string }
      if (await apps.get(body.app_id) !== undefined) throw new ApiError(400, { code: CODE.unknown, message: 'app already exists' })
      const secret = body.secret === undefined || body.secret === '' ? newSecret() : body.secret
      await apps.put({ app_id: body.app_id, name: body.name, secret, desc: body.desc ?? '', status: body.status ?? true, expired: body.expired ?? 'undefined' })
      return { secret }
    }
  },
  {
    method: 'GET', path: '/apps/:appid', name: 'lookup_app', descr: 'Lookup an application (with its secret)',
    handler: async ({ params }, { apps }) => await existingApp(apps, params.appid)
  },
  {
    method: 'PUT', path: '/apps/:appid', name: 'update_app', descr: 'Update an application',
    validate: { payload: Joi.object({ name: Joi.string(), desc: Joi.string().allow(''), status: Joi.boolean(), expired }) },
    handler: async ({ params, payload }, { apps }) => {
      const app = await existingApp(apps, params.appid)
      await apps.put({ ...app, ...(payload as Partial<App>), app_id: app.app_id, secret: app.secret })
      return OK
    }
  },
  {
    method: 'DELETE', path: '/apps/:appid', name: 'del_app', descr: 'Delete an application',
    handler: async ({ params }, { apps }) => {
      if (!await apps.remove(params.appid)) throw notFound(`no application ${params.appid}`)
      return OK
    }
  }
]
