// broker_dashboard: the web console on port 18083 (SPEC §4.4). It serves the
// built single-page app (ui/, made by `npm run build`), logs administrators
// in with a session cookie, and answers the page's calls: its own
// (console-routes.ts) and the management API v3, forwarded to
// broker_management's routes (v3-forward.ts), which it needs loaded. It
// samples every node for the overview's charts (samples.ts). README.md
// holds the contract with the front end and the settings.
import { readFile } from 'node:fs/promises'
import { resolve } from 'node:path'
import Boom from '@hapi/boom'
import { definePlugin, listenerRecord, MANAGEMENT_PLUGIN, type ManagementApi, type PluginContext } from '../../lib/plugin-kit/admin.js'
import { answered, readingOf, SampleStore } from './samples.js'
import { createServer } from './server.js'
import { Sessions } from './sessions.js'
import { listenOn, schema, type DashboardConfig } from './settings.js'
import { V3Servers } from './v3-forward.js'

export { schema } from './settings.js'
export type { DashboardConfig } from './settings.js'

/** A PEM file named by a setting, relative to the install root; a missing or unreadable file names the key and path. */
async function pemFile (root: string, key: string, value: string): Promise<Buffer> {
  const path = resolve(root, value)
  try {
    return await readFile(path)
  } catch (err) {
    throw new Error(`${key}: cannot read ${path}: ${(err as Error).message}`, { cause: err })
  }
}

async function tlsFiles (ctx: PluginContext<DashboardConfig>): Promise<{ cert: Buffer, key: Buffer, ca?: Buffer }> {
  const config = ctx.config
  const ca = config['dashboard.listener.https.cacertfile']
  return {
    cert: await pemFile(ctx.root, 'dashboard.listener.https.certfile', config['dashboard.listener.https.certfile']),
    key: await pemFile(ctx.root, 'dashboard.listener.https.keyfile', config['dashboard.listener.https.keyfile']),
    ...(ca === undefined ? {} : { ca: await pemFile(ctx.root, 'dashboard.listener.https.cacertfile', ca) })
  }
}

/** Every `interval`, each live node's counters into `store`; nodes that left are dropped. */
function startSampling (ctx: PluginContext<DashboardConfig>, store: SampleStore): void {
  const cluster = ctx.capability('administration').node.cluster
  let running = false
  const sample = async (): Promise<void> => {
    if (running) return
    running = true
    try {
      const [metrics, stats] = await Promise.all([cluster.each('metrics'), cluster.each('stats')])
      const now = Date.now()
      const statsOf = answered(stats)
      for (const [node, counters] of answered(metrics)) {
        const nodeStats = statsOf.get(node)
        if (nodeStats !== undefined) store.add(node, readingOf(now, counters, nodeStats))
      }
      store.keepOnly(await ctx.cluster.nodes())
    } catch (err) {
      ctx.logger.warn({ err }, 'dashboard sampling failed')
    } finally {
      running = false
    }
  }
  void sample()
  ctx.timers.setInterval(() => { void sample() }, store.intervalMs)
  ctx.cluster.onNodeLeft((node) => { store.forget(node) })
  ctx.onUnload(() => { store.clear() })
}

export default definePlugin<DashboardConfig>({
  name: 'broker_dashboard',
  version: '0.1.0',
  description: 'Web console on port 18083 (needs broker_management)',
  schema,
  capabilities: ['administration'],

  async load (ctx) {
    const https = ctx.config['dashboard.listener.https']
    // the HTTPS files are read first, so a missing one fails the load before anything starts
    const tls = https === undefined ? undefined : await tlsFiles(ctx)
    const admin = ctx.capability('administration')
    const management = (): ManagementApi => {
      const api = admin.provided<ManagementApi>(MANAGEMENT_PLUGIN)
      if (api === undefined) throw Boom.serverUnavailable(`${MANAGEMENT_PLUGIN} is not loaded: the dashboard's API needs it (broker_ctl plugins load ${MANAGEMENT_PLUGIN})`)
      return api
    }
    const sessions = new Sessions(() => ctx.config['dashboard.session_timeout'])
    ctx.onUnload(() => { sessions.clear() })
    const samples = new SampleStore(ctx.config['dashboard.sample_interval'])
    startSampling(ctx, samples)
    const v3 = new V3Servers()
    ctx.onUnload(async () => { await v3.close() })
    const context = { sessions, management, samples, node: ctx.node, cluster: ctx.cluster, passwordMinLength: () => ctx.config['dashboard.password_min_length'] }
    const docroot = resolve(ctx.root, ctx.config['dashboard.docroot'])
    const listeners = [{ kind: 'http' as const, listen: ctx.config['dashboard.listener.http'], tls: undefined }]
    if (https !== undefined) listeners.push({ kind: 'https' as never, listen: https, tls: tls as never })
    for (const { kind, listen, tls: files } of listeners) {
      const server = await createServer({ listen: listenOn(listen), tls: files, docroot, v3, logger: ctx.logger }, context)
      ctx.listeners.add(listenerRecord(server, `${kind}:dashboard`, {
        acceptors: ctx.config[`dashboard.listener.${kind}.acceptors`],
        maxClients: ctx.config[`dashboard.listener.${kind}.max_clients`]
      }))
      await server.start()
      ctx.servers.add(server.listener)
      ctx.onUnload(async () => { await server.stop({ timeout: 2000 }) })
      ctx.logger.info({ uri: server.info.uri }, 'dashboard listening')
    }
  }
})
