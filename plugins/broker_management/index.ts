// broker_management: the management REST API v3 (SPEC §4.1–4.3) on hapi.
// Every request authenticates as an application (§5.1). The operations are
// the rows of routes.ts; they reach the node only through the node service
// (`ctx.node`). README.md lists the settings and the decisions.
import type Hapi from '@hapi/hapi'
import { definePlugin } from '../../lib/plugins/contract.js'
import { Apps } from './apps.js'
import { Users } from './users.js'
import { routes } from './routes.js'
import { createServer } from './server.js'
import { listenOn, schema, type ManagementConfig } from './settings.js'

export { schema } from './settings.js'
export type { ManagementConfig } from './settings.js'

// one load at a time (the host serialises load and unload)
let server: Hapi.Server | null = null

export default definePlugin<ManagementConfig>({
  name: 'broker_management',
  version: '0.1.0',
  description: 'Management REST API v3 (hapi, applications as Basic credentials)',
  schema,

  async load (ctx) {
    const apps = new Apps(ctx.store, {
      id: ctx.config['management.default_application.id'],
      secret: ctx.config['management.default_application.secret']
    })
    await apps.seed()
    const users = new Users(ctx.store, {
      login: ctx.config['dashboard.default_user.login'],
      password: ctx.config['dashboard.default_user.password']
    })
    await users.seed()
    const api = { node: ctx.node, apps, users, maxRowLimit: ctx.config['management.max_row_limit'], routes }
    const created = await createServer(listenOn(ctx.config['management.listener.http']), api, ctx.logger)
    await created.start()
    server = created
    ctx.logger.info({ uri: created.info.uri }, 'management API listening')
  },

  async unload () {
    const running = server
    server = null
    await running?.stop({ timeout: 2000 })
  }
})
