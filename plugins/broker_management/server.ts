// The hapi server of the management APIs (apis.ts: v3 and v2), built from
// their route tables: Basic auth by each API's credentials, joi validation
// with EMQ X's error codes, `:node` checked against this node, paging, and
// every answer a JSON body in the API's own shape. A handler's failure is a
// 500; the server keeps serving. While the node cannot reach its store (a
// cluster's Redis down) a request that needs a login is answered 503 at once:
// the applications and users are kept there, and waiting for the store's
// connection to give up (about 21 s) would end in a 500.
import Basic from '@hapi/basic'
import Hapi from '@hapi/hapi'
import type { Boom } from '@hapi/boom'
import Joi from 'joi'
import type { Logger } from '../../lib/plugin-kit/admin.js'
import { APIS, v3, type Api, type ServerContext } from './apis.js'
import { openapi } from './openapi.js'
import { pluginRoutes, type PluginRouteEntry, type PluginRouteTable } from './plugin-routes.js'
import { ApiError, CODE, validationError } from './errors.js'
import { allows, forbidden, type Caller, type Role } from './roles.js'
import { TooManyLogins } from './login-limit.js'
import { allowedMethods } from './method-not-allowed.js'
import { COOKIE_STRATEGY, cookieAuth } from './cookie-auth.js'
import { statusRoutes } from './status.js'
import { assertLiveNode, type ApiContext, type Route } from './routes.js'

export const REALM = 'broker'

/** `/nodes/:node/plugins/` → `<base>/nodes/{node}/plugins`; a last `:topic` takes the rest of the path (topics hold slashes). */
export function hapiPath (base: string, path: string): string {
  const full = (base + path).replace(/\/$/, '')
  return full.replace(/:(\w+)/g, (_m, name: string, at: number) => at + name.length + 1 === full.length && name === 'topic' ? `{${name}*}` : `{${name}}`)
}

function paramNames (path: string): string[] {
  return [...path.matchAll(/:(\w+)/g)].map(([, name]) => name)
}

/** joi's first complaint → 107 (missing) or 108 (wrong type or value). */
function answer (h: Hapi.ResponseToolkit, status: number, body: unknown): Hapi.ResponseObject {
  return h.response(JSON.stringify(body)).type('application/json').code(status)
}

function refuse (h: Hapi.ResponseToolkit, api: Api, err: ApiError): Hapi.ResponseObject {
  const response = answer(h, err.status, api.failure(err))
  if (err instanceof TooManyLogins) return response.header('Retry-After', String(err.retryAfter))
  if (err.allow !== undefined) response.header('Allow', err.allow.join(', '))
  return err.status === 401 && api.challenge !== undefined ? response.header('WWW-Authenticate', api.challenge) : response
}

/** hapi's own refusals (no route, body not JSON, bad auth header) as this API's refusals. */
function refusalOf (boom: Boom, request: Hapi.Request, open: Set<string>, plugins: PluginRouteTable): ApiError {
  const status = boom.output.statusCode
  if (status === 401 || (status === 400 && !request.auth.isAuthenticated && !open.has(request.route.path))) {
    return new ApiError(401, { message: 'unauthorized' }, CODE.wrongCredentials)
  }
  if (status === 404) {
    const allow = allowedMethods(request.server, request.path, plugins)
    if (allow.length > 0) return Object.assign(new ApiError(405, { message: 'method not allowed' }), { allow })
    return new ApiError(404, { message: 'not found' })
  }
  if (status === 400 || status === 415) return new ApiError(400, { code: CODE.notJson, message: `request body is not JSON: ${boom.message}` })
  return new ApiError(status, { message: status >= 500 ? 'internal error' : boom.message })
}

/** `tls`: serve HTTPS with this certificate and key (PEM) instead of HTTP. */
export async function createServer (listen: { host: string, port: number }, context: ServerContext, logger: Logger, tls?: { cert: Buffer, key: Buffer }, apis: readonly Api[] = APIS): Promise<Hapi.Server> {
  const server = Hapi.server({ host: listen.host, port: listen.port, router: { stripTrailingSlash: true }, ...(tls === undefined ? {} : { tls }) })
  await server.register(Basic)
  const cookies = context.cookies
  if (cookies !== undefined) cookieAuth(server, cookies, apis.map((api) => api.base))
  for (const api of apis) {
    server.auth.strategy(api.strategy, 'basic', {
      unauthorizedAttributes: { realm: REALM },
      validate: async (request: Hapi.Request, user: string, password: string, h: Hapi.ResponseToolkit) => {
        let role: Role | undefined
        try {
          const isValid = await context.logins.check(request.info.remoteAddress, async () => {
            role = await api.verify(context, user, password)
            return role !== undefined
          })
          return { isValid, credentials: { user, role } }
        } catch (err) {
          if (err instanceof TooManyLogins) return { isValid: false, response: refuse(h, api, err) }
          throw err
        }
      }
    })
    mountApi(server, api, context, logger, cookies === undefined ? [api.strategy] : [api.strategy, COOKIE_STRATEGY])
  }
  // health for orchestrators, outside the APIs and without credentials (status.ts)
  server.route(statusRoutes(context.node))
  // the Prometheus scrape endpoint: outside the APIs and without credentials, as scrapers expect
  server.route({
    method: 'GET',
    path: '/metrics',
    options: { auth: false },
    handler: async (_request, h) => {
      const { contentType, text } = await context.node.prometheus()
      return h.response(text).type(contentType)
    }
  })
  answerRefusals(server, apis, context, logger, 'everywhere')
  refuseWithoutStore(server, apis, context.node)
  return server
}

/** The API whose base `path` is under, if any. */
function apiOfPath (apis: readonly Api[], path: string): Api | undefined {
  return apis.find((api) => path === api.base || path.startsWith(api.base + '/'))
}

/** Seconds a client is told to wait before asking again while the store cannot be reached. */
export const STORE_RETRY_AFTER_S = 5
export const STORE_UNAVAILABLE = 'store_unavailable: the node cannot reach its store (the cluster\'s Redis), where the logins are kept; try again once it is back'

function refuseWithoutStore (server: Hapi.Server, apis: readonly Api[], node: ServerContext['node']): void {
  server.ext('onPreAuth', (request, h) => {
    // routes without credentials (hapi: `auth: false` reads as no strategies) do not need the store
    if ((request.route.settings.auth?.strategies ?? []).length === 0) return h.continue
    if (!node.health().reasons.includes('store_unavailable')) return h.continue
    const api = apiOfPath(apis, request.path) ?? apis[0]
    return refuse(h, api, new ApiError(503, { message: STORE_UNAVAILABLE })).header('Retry-After', String(STORE_RETRY_AFTER_S)).takeover()
  })
}

/** Serves `api`'s route table (v3: and the plugins' routes) on `server`, authenticated by `strategies` (credentials `{user, role}`). */
export function mountApi (server: Hapi.Server, api: Api, context: ServerContext, logger: Logger, strategies: string[]): void {
  // made again when the plugins' routes have changed (v3 describes them too)
  let document: { routes: string, value: unknown } | undefined
  const described = (): PluginRouteEntry[] => api.base === v3.base ? context.pluginRoutes.list() : []
  const current = (): unknown => {
    const routes = described()
    const key = routes.map((r) => `${r.owner} ${r.method} ${r.path}`).join('\n')
    if (document?.routes !== key) document = { routes: key, value: openapi(api, routes) }
    return document.value
  }
  const handlerContext: ApiContext = { ...context, routes: api.routes, openapi: current }
  for (const route of api.routes) server.route(hapiRoute(api, route, handlerContext, logger, strategies))
  if (api.base === v3.base) server.route(pluginRoutes(context.pluginRoutes, context.node, strategies, answer, (h, err) => refuse(h, api, err)))
}

/**
 * hapi's own refusals (no route, body not JSON, bad credentials) in the shape
 * of the API the path is under; `everywhere`: a path outside every API too,
 * in the first API's shape (`apis-only`: left to the server's other parts).
 */
export function answerRefusals (server: Hapi.Server, apis: readonly Api[], context: ServerContext, logger: Logger, scope: 'everywhere' | 'apis-only'): void {
  const open = new Set(apis.flatMap((api) => api.routes.filter((r) => r.auth === false).map((r) => hapiPath(api.base, r.path))))
  const apiOf = (path: string): Api | undefined => apiOfPath(apis, path) ?? (scope === 'everywhere' ? apis[0] : undefined)
  server.ext('onPreResponse', (request, h) => {
    const response = request.response
    if (!('isBoom' in response) || response.isBoom !== true) return h.continue
    const api = apiOf(request.path)
    if (api === undefined) return h.continue
    const boom = response as Boom
    if (boom.output.statusCode >= 500) logger.error({ err: boom, path: request.path }, 'management API failure')
    return refuse(h, api, refusalOf(boom, request, open, context.pluginRoutes))
  })
}

function callerOf (request: Hapi.Request): Caller | undefined {
  const credentials = request.auth.credentials as { user?: string, role?: Role } | null
  return credentials?.user === undefined || credentials.role === undefined ? undefined : { id: credentials.user, role: credentials.role }
}

/** `strategies`: the API's credentials (Basic), then the session cookie when it is on. */
function hapiRoute (api: Api, route: Route, context: ApiContext, logger: Logger, strategies: string[]): Hapi.ServerRoute {
  const names = paramNames(route.path)
  const query = route.paged === true ? Joi.object(api.pagingQuery).concat(route.validate?.query ?? Joi.object()) : route.validate?.query
  const payload = route.validate?.payload
  return {
    method: route.method,
    path: hapiPath(api.base, route.path),
    options: {
      auth: route.auth === false ? false : { strategies },
      // parsed here (not by hapi's validate) so every failure becomes this API's own error body
      payload: route.method === 'GET' || route.method === 'DELETE' ? undefined : { parse: true, allow: 'application/json', failAction: 'error' }
    },
    handler: async (request, h) => {
      try {
        const params = request.params as Record<string, string>
        const caller = callerOf(request)
        if (route.auth !== false && !allows(caller?.role ?? 'viewer', route.role)) throw forbidden(route.role)
        for (const name of names) {
          if (typeof params[name] !== 'string' || params[name] === '') throw new ApiError(400, { code: CODE.missing, message: `"${name}" is required` })
        }
        if (params.node !== undefined) await assertLiveNode(context.node, params.node)
        let q: Record<string, unknown> = request.query
        if (query !== undefined) {
          const checked = query.unknown(true).validate(request.query)
          if (checked.error !== undefined) throw validationError(checked.error, 'query')
          q = checked.value as Record<string, unknown>
        }
        let body: unknown = request.payload
        if (payload !== undefined) {
          if (body === null || body === undefined) throw new ApiError(400, { code: CODE.missing, message: 'a JSON object body is required' })
          const checked = payload.validate(body)
          if (checked.error !== undefined) throw validationError(checked.error, 'body')
          body = checked.value
        }
        const result = await route.handler({ params, query: q, payload: body, caller, source: request.info.remoteAddress }, context)
        if (route.raw === true) return answer(h, 200, result)
        return answer(h, 200, api.success(route.paged === true ? api.page(result as unknown[], q, context.maxRowLimit) : result))
      } catch (err) {
        if (err instanceof ApiError) return refuse(h, api, err)
        logger.error({ err, route: route.name }, 'management API handler failed')
        return refuse(h, api, new ApiError(500, { message: (err as Error).message }))
      }
    }
  }
}
