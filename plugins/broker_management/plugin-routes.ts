// The routes other plugins add (`ctx.routes.add`), served under /api/v3 by
// one catch-all hapi route: hapi prefers every built-in route over it, and it
// looks the request up in the plugins' table at each call, so a plugin's
// routes come and go with the plugin. Credentials are checked as on every
// v3 route ('read' routes are open to viewers); a path no plugin serves is
// the API's ordinary 404.
import Boom from '@hapi/boom'
import type Hapi from '@hapi/hapi'
import { RouteError, type PluginRouteMatch } from '../../lib/plugin-kit/admin.js'
import { ApiError, CODE } from './errors.js'
import { allows, forbidden, type Role } from './roles.js'

/** Where plugin routes are served; a plugin's path `/x` is `/api/v3/x`. */
export const PLUGIN_BASE = '/api/v3'
/** The catch-all's hapi path; marked `app.catchAll`, so method-not-allowed.ts does not count it as serving a path. */
const PLUGIN_ROUTES_PATH = `${PLUGIN_BASE}/{pluginPath*}`

export interface PluginRouteTable {
  match: (method: string, path: string) => PluginRouteMatch | undefined
}

/** `answer(h, status, body)` writes a v3 body; `refuse(h, err)` a v3 refusal. */
export function pluginRoutes (table: PluginRouteTable, strategies: string[], answer: (h: Hapi.ResponseToolkit, status: number, body: unknown) => Hapi.ResponseObject, refuse: (h: Hapi.ResponseToolkit, err: ApiError) => Hapi.ResponseObject): Hapi.ServerRoute[] {
  const handler: Hapi.Lifecycle.Method = async (request, h) => {
    const found = table.match(request.method.toUpperCase(), `/${(request.params as { pluginPath?: string }).pluginPath ?? ''}`)
    // refused as any unserved path is (server.ts): 405 when another method is served there, else 404
    if (found === undefined) throw Boom.notFound()
    if (!request.auth.isAuthenticated) return refuse(h, new ApiError(401, { message: 'unauthorized' }, CODE.wrongCredentials))
    const role = (request.auth.credentials as { role?: Role }).role ?? 'viewer'
    const needed: Role = (found.route.access ?? (found.route.method === 'GET' ? 'read' : 'write')) === 'read' ? 'viewer' : 'administrator'
    if (!allows(role, needed)) return refuse(h, forbidden(needed))
    try {
      const data = await found.route.handler({ params: found.params, query: request.query as Record<string, string>, payload: request.payload ?? undefined })
      return answer(h, 200, data)
    } catch (err) {
      if (err instanceof RouteError) return refuse(h, new ApiError(err.status, { code: err.code, message: err.message }))
      throw err
    }
  }
  const auth = { mode: 'try' as const, strategies }
  return [
    { method: ['GET', 'DELETE'], path: PLUGIN_ROUTES_PATH, options: { auth, app: { catchAll: true } }, handler },
    { method: ['POST', 'PUT'], path: PLUGIN_ROUTES_PATH, options: { auth, app: { catchAll: true }, payload: { parse: true, allow: 'application/json', failAction: 'error' } }, handler }
  ]
}
