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
import type { NodeOperations, PluginRoute, PluginRouteAnswer, PluginRouteCall, PluginRouteMatch } from '../../lib/plugin-kit/admin.js'
import { ApiError, CODE, validationError } from './errors.js'
import { allows, forbidden, type Role } from './roles.js'
import { assertLiveNode, onNode, service } from './routes.js'

/** Where plugin routes are served; a plugin's path `/x` is `/api/v3/x`. */
export const PLUGIN_BASE = '/api/v3'
/** The catch-all's hapi path; marked `app.catchAll`, so method-not-allowed.ts does not count it as serving a path. */
const PLUGIN_ROUTES_PATH = `${PLUGIN_BASE}/{pluginPath*}`

/** A plugin's route as the table lists it (`route`: what the plugin declared). */
export interface PluginRouteEntry { owner: string, method: string, path: string, route: PluginRoute }

export interface PluginRouteTable {
  match: (method: string, path: string) => PluginRouteMatch | undefined
  list: () => PluginRouteEntry[]
}

/** The query and body as the route's joi schemas convert them; throws the API's 400 for what they refuse. */
function validated (route: PluginRoute, query: Record<string, string>, payload: unknown): { query: Record<string, string>, payload: unknown } {
  const checks = route.validate
  if (checks === undefined) return { query, payload }
  let q = query
  let body = payload
  if (checks.query !== undefined) {
    const checked = checks.query.unknown(true).validate(query)
    if (checked.error !== undefined) throw validationError(checked.error, 'query')
    q = checked.value as Record<string, string>
  }
  if (checks.payload !== undefined) {
    if (body === null || body === undefined) throw new ApiError(400, { code: CODE.missing, message: 'a JSON body is required' })
    const checked = checks.payload.validate(body)
    if (checked.error !== undefined) throw validationError(checked.error, 'body')
    body = checked.value
  }
  return { query: q, payload: body }
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
      const { query, payload } = validated(found.route, { ...request.query as Record<string, string> }, request.payload ?? undefined)
      const outcome = await run({ method, path, query, payload }, found.params.node)
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
