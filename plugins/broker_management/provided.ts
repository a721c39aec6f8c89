// What broker_management offers other administration plugins (`ctx.provide`,
// the kit's ManagementApi): the dashboard forwards its console's /api/v3
// requests into a server of these routes, as the administrator its session
// cookie names, and logs administrators in against the same users and
// failed-login budget.
import Boom from '@hapi/boom'
import Hapi from '@hapi/hapi'
import { V3_CALLER_STRATEGY, type Logger, type ManagementApi } from '../../lib/plugin-kit/admin.js'
import { v3, type ServerContext } from './apis.js'
import { TooManyLogins } from './login-limit.js'
import { roleOfTags } from './roles.js'
import { answerRefusals, mountApi } from './server.js'

export function managementApi (context: ServerContext, logger: Logger): ManagementApi {
  const { users, logins } = context
  const api = { ...v3, challenge: undefined }
  return {
    v3Server: async () => {
      const server = Hapi.server({ router: { stripTrailingSlash: true } })
      // the caller authenticates; a request it injects without credentials is refused
      server.auth.scheme(V3_CALLER_STRATEGY, () => ({ authenticate: () => { throw Boom.unauthorized(null, 'Session') } }))
      server.auth.strategy(V3_CALLER_STRATEGY, V3_CALLER_STRATEGY)
      mountApi(server, api, context, logger, [V3_CALLER_STRATEGY])
      answerRefusals(server, [api], context, logger, 'everywhere')
      await server.initialize()
      return server
    },
    login: async (source, username, password) => {
      try {
        return { ok: await logins.check(source, async () => await users.verify(username, password)) }
      } catch (err) {
        if (err instanceof TooManyLogins) return { ok: false, retryAfter: err.retryAfter }
        throw err
      }
    },
    role: async (username) => {
      const user = await users.get(username)
      return user === undefined ? undefined : roleOfTags(user.tags)
    },
    setPassword: async (username, password) => { await users.setPassword(username, password) }
  }
}
