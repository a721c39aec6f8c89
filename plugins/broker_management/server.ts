// The hapi server of the v3 API, built from the route table: Basic auth by
// application, joi validation with EMQ X's error codes, `:node` checked
// against this node, paging, and every answer a JSON body. A handler's
// failure is a 500 `{message}`; the server keeps serving.
import Basic from '@hapi/basic'
import Hapi from '@hapi/hapi'
import type { Boom } from '@hapi/boom'
import Joi from 'joi'
import type { Logger } from '../../lib/log.js'
import { ApiError, CODE } from './errors.js'
import { page, pagingQuery } from './paging.js'
import type { ApiContext, Route } from './routes.js'

export const BASE = '/api/v3'
export const REALM = 'broker'

/** `/nodes/:node/plugins/` → `/api/v3/nodes/{node}/plugins`; a last `:topic` takes the rest of the path (topics hold slashes). */
export function hapiPath (path: string): string {
  const full = (BASE + path).replace(/\/$/, '')
  return full.replace(/:(\w+)/g, (_m, name: string, at: number) => at + name.length + 1 === full.length && name === 'topic' ? `{${name}*}` : `{${name}}`)
}

function paramNames (path: string): string[] {
  return [...path.matchAll(/:(\w+)/g)].map(([, name]) => name)
}

/** joi's first complaint → 107 (missing) or 108 (wrong type or value). */
function validationError (err: Joi.ValidationError | undefined, source: string): ApiError {
  const detail = err?.details?.[0]
  const code = detail?.type === 'any.required' ? CODE.missing : CODE.wrongType
  return new ApiError(400, { code, message: detail?.message ?? `bad ${source}` })
}

function answer (h: Hapi.ResponseToolkit, status: number, body: unknown): Hapi.ResponseObject {
  return h.response(JSON.stringify(body)).type('application/json').code(status)
}

/** `tls`: serve HTTPS with this certificate and key (PEM) instead of HTTP. */
export async function createServer (listen: { host: string, port: number }, api: ApiContext, logger: Logger, tls?: { cert: Buffer, key: Buffer }): Promise<Hapi.Server> {
  const server = Hapi.server({ host: listen.host, port: listen.port, router: { stripTrailingSlash: true }, ...(tls === undefined ? {} : { tls }) })
  await server.register(Basic)
  server.auth.strategy('application', 'basic', {
    unauthorizedAttributes: { realm: REALM },
    validate: async (_request: Hapi.Request, appId: string, secret: string) => {
      const isValid = await api.apps.verify(appId, secret)
      return { isValid, credentials: { appId } }
    }
  })
  server.auth.default('application')

  for (const route of api.routes) server.route(hapiRoute(route, api, logger))
  // the Prometheus scrape endpoint: outside /api/v3 and without credentials, as scrapers expect
  server.route({
    method: 'GET',
    path: '/metrics',
    options: { auth: false },
    handler: async (_request, h) => {
      const { contentType, text } = await api.node.prometheus()
      return h.response(text).type(contentType)
    }
  })

  // hapi's own refusals (no route, body not JSON, bad auth header) in this API's shapes
  const open = new Set(api.routes.filter((r) => r.auth === false).map((r) => hapiPath(r.path)))
  server.ext('onPreResponse', (request, h) => {
    const response = request.response
    if (!('isBoom' in response) || response.isBoom !== true) return h.continue
    const boom = response as Boom
    const status = boom.output.statusCode
    if (status === 401 || (status === 400 && !request.auth.isAuthenticated && !open.has(request.route.path))) {
      return answer(h, 401, { message: 'unauthorized' }).header('WWW-Authenticate', `Basic realm="${REALM}"`)
    }
    if (status === 404) return answer(h, 404, { message: 'not found' })
    if (status === 400 || status === 415) return answer(h, 400, { code: CODE.notJson, message: `request body is not JSON: ${boom.message}` })
    if (status >= 500) logger.error({ err: boom, path: request.path }, 'management API failure')
    return answer(h, status, { message: status >= 500 ? 'internal error' : boom.message })
  })
  return server
}

function hapiRoute (route: Route, api: ApiContext, logger: Logger): Hapi.ServerRoute {
  const names = paramNames(route.path)
  const query = route.paged === true ? Joi.object(pagingQuery).concat(route.validate?.query ?? Joi.object()) : route.validate?.query
  const payload = route.validate?.payload
  return {
    method: route.method,
    path: hapiPath(route.path),
    options: {
      auth: route.auth === false ? false : undefined,
      // parsed here (not by hapi's validate) so every failure becomes this API's own error body
      payload: route.method === 'GET' || route.method === 'DELETE' ? undefined : { parse: true, allow: 'application/json', failAction: 'error' }
    },
    handler: async (request, h) => {
      try {
        const params = request.params as Record<string, string>
        for (const name of names) {
          if (typeof params[name] !== 'string' || params[name] === '') throw new ApiError(400, { code: CODE.missing, message: `"${name}" is required` })
        }
        if (params.node !== undefined && params.node !== api.node.name) throw new ApiError(404, { message: 'node not found' })
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
        const result = await route.handler({ params, query: q, payload: body }, api)
        return answer(h, 200, route.paged === true ? page(result as unknown[], q, api.maxRowLimit) : result)
      } catch (err) {
        if (err instanceof ApiError) return answer(h, err.status, err.body)
        logger.error({ err, route: route.name }, 'management API handler failed')
        return answer(h, 500, { message: (err as Error).message })
      }
    }
  }
}
