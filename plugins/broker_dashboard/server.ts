// The console's hapi server (one per listener): the page and its assets,
// the console's API, and the management API v3 forwarded under /api/v3. A
// refusal outside /api/v3 (and the CSRF gate's, everywhere) is JSON
// `{message}` under /api/, a plain 404 page elsewhere.
import type { Boom } from '@hapi/boom'
import Hapi from '@hapi/hapi'
import type { Logger } from '../../lib/plugin-kit/admin.js'
import { consoleRoutes, type ConsoleContext } from './console-routes.js'
import { sessionAuth } from './session-auth.js'
import { staticRoutes } from './static-files.js'
import { v3Routes, type V3Servers } from './v3-forward.js'

export interface ServerOptions {
  listen: { host: string, port: number }
  tls?: { cert: Buffer, key: Buffer, ca?: Buffer }
  docroot: string
  v3: V3Servers
  logger: Logger
}

export async function createServer (options: ServerOptions, context: ConsoleContext): Promise<Hapi.Server> {
  const { listen, tls, docroot, v3, logger } = options
  const server = Hapi.server({
    host: listen.host,
    port: listen.port,
    router: { stripTrailingSlash: true },
    // a malformed cookie of another site on this host is ignored, not a 400
    routes: { state: { parse: true, failAction: 'ignore' } },
    ...(tls === undefined ? {} : { tls })
  })
  sessionAuth(server, context.sessions, context.management)
  server.route([...staticRoutes(docroot), ...consoleRoutes(context), ...v3Routes(v3, context.management)])
  server.ext('onPreResponse', (request, h) => {
    const response = request.response
    if (!('isBoom' in response) || response.isBoom !== true) return h.continue
    const boom = response as Boom
    const status = boom.output.statusCode
    if (status >= 500 && status !== 503) logger.error({ err: boom, path: request.path }, 'dashboard request failed')
    const message = status >= 500 && status !== 503 ? 'internal error' : boom.message
    if (!request.path.startsWith('/api/')) return h.response(message).type('text/plain; charset=utf-8').code(status)
    return h.response(JSON.stringify({ message })).type('application/json').code(status)
  })
  return server
}
