// The console's /api/v3/*: each request is handed, in process
// (`server.inject`), to a server of broker_management's v3 routes
// (ManagementApi.v3Server) as the administrator the session names, so the
// console gets exactly the management API's routes, validation, answers and
// refusals, its roles included (a viewer reads, every change is 403). That
// server is made again when broker_management was reloaded (a new API
// object), and stopped with the plugin.
import type Hapi from '@hapi/hapi'
import { V3_CALLER_STRATEGY, type ManagementApi } from '../../lib/plugin-kit/admin.js'
import { SESSION_STRATEGY, type ManagementLookup, type SessionCredentials } from './session-auth.js'

/** headers of the inner answer not copied: they describe its own transfer */
const HOP_HEADERS: readonly string[] = Object.freeze(['content-length', 'connection', 'transfer-encoding', 'keep-alive', 'date'])
const FORWARDED_REQUEST_HEADERS = Object.freeze(['content-type', 'accept'] as const)

export class V3Servers {
  #current: { api: ManagementApi, server: Promise<Hapi.Server> } | undefined

  async serverFor (api: ManagementApi): Promise<Hapi.Server> {
    if (this.#current?.api !== api) {
      const old = this.#current
      this.#current = { api, server: api.v3Server() }
      if (old !== undefined) await stopQuietly(old.server)
    }
    return await this.#current.server
  }

  async close (): Promise<void> {
    const current = this.#current
    this.#current = undefined
    if (current !== undefined) await stopQuietly(current.server)
  }
}

async function stopQuietly (server: Promise<Hapi.Server>): Promise<void> {
  await server.then(async (s) => { await s.stop() }, () => {})
}

/** GET (and HEAD), and the methods with a body, handed over unparsed (by name: hapi prefers any route of the method to a `*` one) */
export function v3Routes (servers: V3Servers, management: ManagementLookup): Hapi.ServerRoute[] {
  const handler: Hapi.Lifecycle.Method = async (request, h) => {
      const server = await servers.serverFor(management())
      const credentials = request.auth.isAuthenticated ? request.auth.credentials as unknown as SessionCredentials : undefined
      const headers: Record<string, string> = {}
      for (const name of FORWARDED_REQUEST_HEADERS) {
        const value = request.headers[name]
        if (typeof value === 'string') headers[name] = value
      }
      const answer = await server.inject({
        method: request.method,
        url: request.url.pathname + request.url.search,
        headers,
        payload: Buffer.isBuffer(request.payload) && request.payload.length > 0 ? request.payload : undefined,
        remoteAddress: request.info.remoteAddress,
        ...(credentials === undefined ? {} : { auth: { strategy: V3_CALLER_STRATEGY, credentials: { user: credentials.user, role: credentials.role } as Hapi.AuthCredentials } })
      })
      const response = h.response(answer.rawPayload).code(answer.statusCode)
      for (const [name, value] of Object.entries(answer.headers)) {
        if (value !== undefined && !HOP_HEADERS.includes(name)) response.header(name, Array.isArray(value) ? value.join(', ') : String(value))
      }
      return response
  }
  // the v3 server refuses a request without credentials itself, in v3's shape
  const auth = { strategy: SESSION_STRATEGY, mode: 'try' as const }
  return [
    { method: 'GET', path: '/api/v3/{path*}', options: { auth }, handler },
    { method: ['POST', 'PUT', 'DELETE', 'PATCH'], path: '/api/v3/{path*}', options: { auth, payload: { parse: false, output: 'data' } }, handler }
  ]
}
