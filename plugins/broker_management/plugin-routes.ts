// The routes other plugins add (`ctx.routes.add`), served under /api/v3 by
// one catch-all hapi route: hapi prefers every built-in route over it, and it
// looks the request up in the plugins' table at each call, so a plugin's
// routes come and go with the plugin. Credentials are checked as on every
// v3 route ('read' routes are open to viewers); a path no plugin serves is
// the API's ordinary 404.
import type Hapi from '@hapi/hapi'
import { RouteError, type PluginRouteMatch } from '../../lib/plugin-kit/admin.js'
import { ApiError, CODE } from './errors.js'
import { allows, forbidden, type Role } from './roles.js'
import { allowedMethods } from './method-not-allowed.js'

/** The catch-all's hapi path; marked `app.catchAll`, so method-not-allowed.ts does not count it as serving a path. */
const PLUGIN_ROUTES_PATH = '/api/v3/{pluginPath*}'

const METHODS = Object.freeze(['GET', 'POST', 'PUT', 'DELETE'] as const)

export interface PluginRouteTable {
  match: (method: string, path: string) => PluginRouteMatch | undefined
}

/** `answer(h, status, body)` writes a v3 body; `refuse(h, err)` a v3 refusal. */
export function pluginRoutes (table: PluginRouteTable, strategies: string[], answer: (h: Hapi.ResponseToolkit, status: number, body: unknown) => Hapi.ResponseObject, refuse: (h: Hapi.ResponseToolkit, err: ApiError) => Hapi.ResponseObject): Hapi.ServerRoute[] {
  const handler: Hapi.Lifecycle.Method = async (request, h) => {
      const path = `/${(request.params as { pluginPath?: string }).pluginPath ?? ''}`
      const found = table.match(request.method.toUpperCase(), path)
      if (found === undefined) return refuse(h, notServed(table, path, allowedMethods(request.server, request.path)))
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

/** 405 with the methods the path is served for (by the API's own routes, `builtIn`, or a plugin's), else 404. */
function notServed (table: PluginRouteTable, path: string, builtIn: string[]): ApiError {
  const allow = [...builtIn, ...METHODS.filter((method) => table.match(method, path) !== undefined && !builtIn.includes(method))]
  if (allow.length === 0) return new ApiError(404, { message: 'not found' })
  return Object.assign(new ApiError(405, { message: 'method not allowed' }), { allow })
}
