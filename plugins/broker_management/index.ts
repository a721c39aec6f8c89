// broker_management: the management REST APIs on hapi: v3 (SPEC §4.1–4.3,
// applications as credentials) and v2 (§4.5, administrator users), one
// server serving both (apis.ts). The operations are the rows of routes.ts
// and routes-v2.ts; they reach the node only through its operations (the
// `administration` capability), whose facts presenters/ turns into SPEC records.
// README.md lists the settings and the decisions.
import { definePlugin, listenerRecord, readSettingFile as pemFile, type ListenerLimits, type Logger } from '../../lib/plugin-kit/admin.js'
import { Apps } from './apps.js'
import { LoginLimit } from './login-limit.js'
import { Users } from './users.js'
import { CookieSessions } from './cookie-auth.js'
import { adminsCommand, mgmtCommand } from './commands.js'
import { createServer } from './server.js'
import { managementApi } from './provided.js'
import { listenOn, schema, type ManagementConfig } from './settings.js'

export { schema } from './settings.js'
export type { ManagementConfig } from './settings.js'

/** The credentials a new install ships with (settings.ts defaults): still good means anyone who read the README gets in. */
const SHIPPED = { login: 'admin', password: 'public' }

async function warnDefaultCredentials (apps: Apps, users: Users, logger: Logger): Promise<void> {
  if (await users.verify(SHIPPED.login, SHIPPED.password)) {
    logger.warn({ user: SHIPPED.login }, `the administrator user ${SHIPPED.login} still has the default password ${SHIPPED.password}: change it (broker_ctl admins passwd ${SHIPPED.login} <new>)`)
  }
  if (await apps.verify(SHIPPED.login, SHIPPED.password)) {
    logger.warn({ app_id: SHIPPED.login }, `the management application ${SHIPPED.login} still has the default secret ${SHIPPED.password}: change management.default_application.secret or delete the application`)
  }
}

function limits (config: ManagementConfig, kind: 'http' | 'https'): ListenerLimits {
  return { acceptors: config[`management.listener.${kind}.acceptors`], maxClients: config[`management.listener.${kind}.max_clients`] }
}

export default definePlugin<ManagementConfig>({
  name: 'broker_management',
  version: '0.1.0',
  description: 'Management REST API v3 and v2 (hapi; applications, administrator users)',
  schema,
  capabilities: ['administration'],

  async load (ctx) {
    // the HTTPS files are read first, so a missing one fails the load before anything starts
    const https = ctx.config['management.listener.https']
    const tls = https === undefined
      ? undefined
      : {
          cert: await pemFile(ctx.root, 'management.listener.https.certfile', ctx.config['management.listener.https.certfile']),
          key: await pemFile(ctx.root, 'management.listener.https.keyfile', ctx.config['management.listener.https.keyfile'])
        }
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
    await warnDefaultCredentials(apps, users, ctx.logger)
    for (const command of [mgmtCommand(apps), adminsCommand(users)]) ctx.commands.add(command)
    const admin = ctx.capability('administration')
    const api = { node: admin.node, pluginRoutes: admin.pluginRoutes, apps, users, logins: new LoginLimit(ctx.config['management.login_rate']), maxRowLimit: ctx.config['management.max_row_limit'], cookies: new CookieSessions(users) }
    // the dashboard's console API: these routes, users and login limit on its server
    ctx.provide(managementApi(api, ctx.logger))
    // HTTP, and HTTPS when set: two hapi servers built from the same route tables
    const created = [await createServer(listenOn(ctx.config['management.listener.http']), api, ctx.logger)]
    ctx.listeners.add(listenerRecord(created[0], 'http:management', limits(ctx.config, 'http')))
    if (https !== undefined && tls !== undefined) {
      created.push(await createServer(listenOn(https), api, ctx.logger, tls))
      ctx.listeners.add(listenerRecord(created[1], 'https:management', limits(ctx.config, 'https')))
    }
    for (const server of created) {
      await server.start()
      // a later server that fails to start unloads the plugin: the host stops this one then
      ctx.onUnload(async () => { await server.stop({ timeout: 2000 }) })
      ctx.logger.info({ uri: server.info.uri }, 'management API listening')
    }
  }
})
