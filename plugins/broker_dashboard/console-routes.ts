// The console's own API (README.md, "The contract with the front end"):
// login, logout, who is logged in, change one's own password, and the
// overview's samples. Answers are JSON; a refusal is `{message}`.
import Boom from '@hapi/boom'
import type Hapi from '@hapi/hapi'
import Joi from 'joi'
import type { ClusterView, NodeQueries } from '../../lib/plugin-kit/index.js'
import { COOKIE_NAME, LOGIN_PATH, SESSION_STRATEGY, type ManagementLookup, type SessionCredentials } from './session-auth.js'
import type { SampleStore } from './samples.js'
import type { Sessions } from './sessions.js'

export interface ConsoleContext {
  sessions: Sessions
  management: ManagementLookup
  samples: SampleStore
  node: NodeQueries
  cluster: ClusterView
  /** the shortest new password */
  passwordMinLength: () => number
}

const credential = Joi.string().max(1024).required()
const loginBody = Joi.object({ username: credential, password: credential })
const passwordBody = Joi.object({ old_password: credential, new_password: credential })

function json (h: Hapi.ResponseToolkit, status: number, body: unknown): Hapi.ResponseObject {
  return h.response(JSON.stringify(body)).type('application/json').code(status)
}

function checked<T> (schema: Joi.ObjectSchema, payload: unknown): T {
  const { error, value } = schema.validate(payload ?? {})
  if (error !== undefined) throw Boom.badRequest(error.details[0]?.message ?? 'bad body')
  return value as T
}

function tooMany (h: Hapi.ResponseToolkit, retryAfter: number): Hapi.ResponseObject {
  return json(h, 429, { message: `too many failed logins from this address; retry in ${retryAfter} s` }).header('Retry-After', String(retryAfter))
}

const jsonBody = { parse: true, allow: 'application/json', failAction: 'error' } as const
const session = { strategy: SESSION_STRATEGY }

export function consoleRoutes (context: ConsoleContext): Hapi.ServerRoute[] {
  const { sessions, management } = context
  const me = (credentials: SessionCredentials): unknown => ({ username: credentials.user, role: credentials.role, csrf_token: credentials.session.csrf })
  return [
    {
      method: 'POST',
      path: LOGIN_PATH,
      options: { auth: false, payload: jsonBody },
      handler: async (request, h) => {
        const { username, password } = checked<{ username: string, password: string }>(loginBody, request.payload)
        const api = management()
        const outcome = await api.login(request.info.remoteAddress, username, password)
        if (!outcome.ok) return outcome.retryAfter === undefined ? json(h, 401, { message: 'wrong user name or password' }) : tooMany(h, outcome.retryAfter)
        const role = await api.role(username)
        if (role === undefined) return json(h, 401, { message: 'wrong user name or password' })
        // a login replaces the session this browser had
        const previous = (request.state as Record<string, unknown> | null)?.[COOKIE_NAME]
        if (typeof previous === 'string') sessions.end(previous)
        const opened = sessions.open(username)
        return json(h, 200, { username, role, csrf_token: opened.csrf }).state(COOKIE_NAME, opened.token)
      }
    },
    {
      method: 'POST',
      path: '/api/logout',
      options: { auth: session },
      handler: (request, h) => {
        sessions.end((request.auth.credentials as unknown as SessionCredentials).session.token)
        return h.response().code(204).unstate(COOKIE_NAME)
      }
    },
    {
      method: 'GET',
      path: '/api/me',
      options: { auth: session },
      handler: (request, h) => json(h, 200, me(request.auth.credentials as unknown as SessionCredentials))
    },
    {
      method: 'PUT',
      path: '/api/me/password',
      options: { auth: session, payload: jsonBody },
      handler: async (request, h) => {
        const credentials = request.auth.credentials as unknown as SessionCredentials
        const { old_password: oldPassword, new_password: newPassword } = checked<{ old_password: string, new_password: string }>(passwordBody, request.payload)
        const weak = weakness(newPassword, oldPassword, credentials.user, context.passwordMinLength())
        if (weak !== undefined) return json(h, 400, { message: weak })
        const api = management()
        const outcome = await api.login(request.info.remoteAddress, credentials.user, oldPassword)
        if (!outcome.ok) return outcome.retryAfter === undefined ? json(h, 400, { message: 'the old password is wrong' }) : tooMany(h, outcome.retryAfter)
        await api.setPassword(credentials.user, newPassword)
        // the user's other sessions (another browser, a stolen cookie) end with the old password
        sessions.endOthers(credentials.user, credentials.session.token)
        return json(h, 200, {})
      }
    },
    {
      method: 'GET',
      path: '/api/dashboard/samples',
      options: { auth: session, validate: { query: Joi.object({ node: Joi.string().min(1).max(1024) }), failAction: async (_request, _h, err) => { throw Boom.badRequest(err?.message) } } },
      handler: async (request, h) => {
        const node = (request.query as { node?: string }).node ?? context.node.name
        if (!(await context.cluster.nodes()).includes(node)) return json(h, 404, { message: `no node ${node} in the cluster` })
        return json(h, 200, { interval_s: context.samples.intervalMs / 1000, samples: context.samples.samples(node) })
      }
    }
  ]
}

/** Why a new password is refused, or undefined. */
function weakness (password: string, old: string, user: string, minLength: number): string | undefined {
  if ([...password].length < minLength) return `the new password is too short: at least ${minLength} characters`
  if (password === old) return 'the new password is the old one'
  if (password.toLowerCase() === user.toLowerCase()) return 'the new password is the user name'
  return undefined
}
