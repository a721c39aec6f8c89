// The routes other plugins add (`ctx.routes.add`), served under /api/v3 by
// one catch-all hapi route: hapi prefers every built-in route over it, and it
// looks the request up in the plugins' table at each call, so a plugin's
// routes come and go with the plugin. Credentials are checked as on every
// v3 route ('read' routes are open to viewers); a path no plugin serves is
// the API's ordinary 404. A route whose path names a node (`{node}`) is
// answered by that node, as the built-in `/nodes/:node/…` routes are: the
// request goes to it over the cluster RPC (`pluginRoute`), a name that is
// not a live node is refused as theirs are.
import Boom from '@hapi/boom'
import type Hapi from '@hapi/hapi'
import type { NodeOperations, PluginRouteAnswer, PluginRouteCall, PluginRouteMatch } from '../../lib/plugin-kit/admin.js'
import { ApiError, CODE } from './errors.js'
import { allows, forbidden, type Role } from './roles.js'
import { assertLiveNode, onNode, service } from './routes.js'

/** Where plugin routes are served; a plugin's path `/x` is `/api/v3/x`. */
export const PLUGIN_BASE = '/api/v3'
/** The catch-all's hapi path; marked `app.catchAll`, so method-not-allowed.ts does not count it as serving a path. */
const PLUGIN_ROUTES_PATH = `${PLUGIN_BASE}/{pluginPath*}`

export interface PluginRouteTable {
  match: (method: string, path: string) => PluginRouteMatch | undefined
}

/** `answer(h, status, body)` writes a v3 body; `refuse(h, err)` a v3 refusal. */
export function pluginRoutes (table: PluginRouteTable, node: NodeOperations, strategies: string[], answer: (h: Hapi.ResponseToolkit, status: number, body: unknown) => Hapi.ResponseObject, refuse: (h: Hapi.ResponseToolkit, err: ApiError) => Hapi.ResponseObject): Hapi.ServerRoute[] {
  /** The answer of this node (no cluster call, no Redis read), or of the node the path names. */
  const run = async (call: PluginRouteCall, target: string | undefined): Promise<PluginRouteAnswer> => {
    if (target === undefined || target === node.name) return await service(async () => await node.pluginRoute(call))
    await assertLiveNode(node, target)
    return await onNode(node, target, 'pluginRoute', call) as PluginRouteAnswer
  }

  const handler: Hapi.Lifecycle.Method = async (request, h) => {
    const path = `/${(request.params as { pluginPath?: string }).pluginPath ?? ''}`
    const method = request.method.toUpperCase()
    const found = table.match(method, path)
    // refused as any unserved path is (server.ts): 405 when another method is served there, else 404
    if (found === undefined) throw Boom.notFound()
    if (!request.auth.isAuthenticated) return refuse(h, new ApiError(401, { message: 'unauthorized' }, CODE.wrongCredentials))
    const role = (request.auth.credentials as { role?: Role }).role ?? 'viewer'
    const needed: Role = (found.route.access ?? (found.route.method === 'GET' ? 'read' : 'write')) === 'read' ? 'viewer' : 'administrator'
    if (!allows(role, needed)) return refuse(h, forbidden(needed))
    try {
      const outcome = await run({ method, path, query: { ...request.query as Record<string, string> }, payload: request.payload ?? undefined }, found.params.node)
      if ('refused' in outcome) return refuse(h, new ApiError(outcome.refused.status, { code: outcome.refused.code, message: outcome.refused.message }))
      return answer(h, 200, outcome.body)
    } catch (err) {
      if (err instanceof ApiError) return refuse(h, err)
      throw err
    }
  }
  const auth = { mode: 'try' as const, strategies }
  return [
    { method: ['GET', 'DELETE'], path: PLUGIN_ROUTES_PATH, options: { auth, app: { catchAll: true } }, handler },
    { method: ['POST', 'PUT'], path: PLUGIN_ROUTES_PATH, options: { auth, app: { catchAll: true }, payload: { parse: true, allow: 'application/json', failAction: 'error' } }, handler }
  ]
}
