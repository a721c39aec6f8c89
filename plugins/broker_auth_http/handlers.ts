// The hook handlers and how they read the HTTP answers (EMQ X 3.x):
// - authenticate: 200 `ignore` → ignore; other 200 → allow (a JSON body's
//   string `mountpoint` and `username` — the user name as the server stores
//   it — are passed on); any other status → deny (not authorized).
//   After an allow, the superuser request: 200 → superuser.
// - check_acl: 200 `ignore` → ignore; other 200 → allow; other status → deny.
// - no answer at all (down, refused, timed out) → `auth.http.failure`: deny
//   (default: a check the server could not make fails closed) or ignore.
// Handlers never throw.
import type { AuthenticateAnswer, Decision, HookHandlers, Logger } from '../../lib/plugin-kit/index.js'
import type { FailureLog } from './failures.js'
import { fill, parseParams, type Param, type Variables } from './params.js'
import { TransportError, type HttpAnswer, type HttpClient } from './request.js'
import type { AuthHttpConfig, Method } from './settings.js'

export interface Endpoint {
  url: string
  method: Method
  params: Param[]
}

export interface Endpoints {
  auth: Endpoint
  superuser?: Endpoint
  acl?: Endpoint
  /** the answer when the server gives none */
  failure: 'deny' | 'ignore'
}

function endpoint (url: string | undefined, method: Method, params: string): Endpoint | undefined {
  return url === undefined || url === '' ? undefined : { url, method, params: parseParams(params) }
}

export function endpointsOf (config: AuthHttpConfig): Endpoints {
  return {
    auth: endpoint(config['auth.http.auth_req'], config['auth.http.auth_req.method'], config['auth.http.auth_req.params'])!,
    superuser: endpoint(config['auth.http.super_req'], config['auth.http.super_req.method'], config['auth.http.super_req.params']),
    acl: endpoint(config['auth.http.acl_req'], config['auth.http.acl_req.method'], config['auth.http.acl_req.params']),
    failure: config['auth.http.failure']
  }
}

export interface Deps {
  http: HttpClient
  failures: FailureLog
  logger: Logger
}

/** One call: the HTTP answer, or the TransportError (logged once per burst). Other errors are thrown. */
async function call (deps: Deps, to: Endpoint, vars: Variables): Promise<HttpAnswer | TransportError> {
  const params = fill(to.params, vars)
  try {
    const answer = await deps.http.send(to.method, to.url, params)
    deps.failures.answered(to.url)
    return answer
  } catch (err) {
    if (!(err instanceof TransportError)) throw err
    if (!deps.http.closed) deps.failures.failed(to.url, err)
    return err
  }
}

/** `ignore`, allowing surrounding whitespace (a trailing newline must not turn ignore into allow). */
function isIgnore (answer: HttpAnswer): boolean {
  return answer.body.trim() === 'ignore'
}

/** The string `mountpoint` and `username` of a JSON object body (others are left out). */
function allowFields (body: string): { mountpoint?: string, username?: string } {
  if (!body.trimStart().startsWith('{')) return {}
  try {
    const parsed = JSON.parse(body) as Record<string, unknown> | null
    const fields: { mountpoint?: string, username?: string } = {}
    if (typeof parsed?.mountpoint === 'string') fields.mountpoint = parsed.mountpoint
    if (typeof parsed?.username === 'string' && parsed.username !== '') fields.username = parsed.username
    return fields
  } catch {
    return {}
  }
}

export function authenticator (deps: Deps, endpoints: Endpoints): HookHandlers['client.authenticate'] {
  return async (request): Promise<AuthenticateAnswer> => {
    try {
      const { client, password } = request
      const answer = await call(deps, endpoints.auth, { client, password })
      if (answer instanceof TransportError) return endpoints.failure === 'ignore' ? 'ignore' : { result: 'deny', reason: 'not_authorized' }
      if (answer.status !== 200) return { result: 'deny', reason: 'not_authorized' }
      if (isIgnore(answer)) return 'ignore'
      let superuser = false
      if (endpoints.superuser) {
        const su = await call(deps, endpoints.superuser, { client, password })
        superuser = !(su instanceof TransportError) && su.status === 200
      }
      return { result: 'allow', superuser, ...allowFields(answer.body) }
    } catch (err) {
      deps.logger.error({ err, clientId: request?.client?.clientId }, 'HTTP authentication failed; denied')
      return { result: 'deny', reason: 'not_authorized' }
    }
  }
}

export function aclChecker (deps: Deps, acl: Endpoint, failure: Endpoints['failure']): HookHandlers['client.check_acl'] {
  return async (request): Promise<Decision> => {
    try {
      const { client, access, topic } = request
      const answer = await call(deps, acl, { client, access, topic })
      if (answer instanceof TransportError) return failure
      if (answer.status !== 200) return 'deny'
      return isIgnore(answer) ? 'ignore' : 'allow'
    } catch (err) {
      deps.logger.error({ err, clientId: request?.client?.clientId, topic: request?.topic, answer: failure }, 'HTTP ACL check failed')
      return failure
    }
  }
}
