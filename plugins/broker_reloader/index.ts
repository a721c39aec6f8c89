// broker_reloader: reloads a plugin's code when its files change, without
// dropping MQTT clients (EMQ X 3.x emqx_reloader). Every `reloader.interval`
// it compares the files each plugin is imported from with what it saw last
// (code-watch.ts) and asks the host to swap a changed plugin's code (the
// `plugin_code` capability: the new code is imported afresh, the old load
// unloaded, the new one loaded with the same settings; a failure leaves the
// old code running). `broker_ctl reload <Plugin>` and
// `PUT /api/v3/nodes/{node}/plugins/{plugin}/reload` reload one now. Every
// reload is a line of `reloader.logfile`.
import { mkdir } from 'node:fs/promises'
import { dirname, isAbsolute, resolve } from 'node:path'
import Joi from 'joi'
import { definePlugin, durationSetting } from '../../lib/plugin-kit/index.js'
import { reloadLog } from './reload-log.js'
import { reloads } from './reloads.js'
import { reloadCommand, reloadRoute } from './requests.js'

export interface ReloaderConfig {
  /** ms; 0: no interval check */
  'reloader.interval': number
  /** '' for none; relative to the install root */
  'reloader.logfile': string
}

/** The shortest interval that is not 0: each check reads every plugin folder. */
export const MIN_INTERVAL = 1000

export const schema = Joi.object<ReloaderConfig>({
  'reloader.interval': durationSetting(60_000, 0).custom((ms: number) => {
    if (ms !== 0 && ms < MIN_INTERVAL) throw new Error(`must be 0 (off) or at least ${MIN_INTERVAL / 1000}s`)
    return ms
  }),
  'reloader.logfile': Joi.string().allow('').default('log/reloader.log')
})

/** The log file's path: '' is none; a relative path starts at the install root (as `log.file` does). */
export function logFilePath (setting: string, root: string): string | undefined {
  if (setting === '') return undefined
  return isAbsolute(setting) ? setting : resolve(root, setting)
}

export default definePlugin<ReloaderConfig>({
  name: 'broker_reloader',
  version: '0.1.0',
  description: 'Reloads a plugin\'s code when its files change, keeping its settings and the MQTT clients',
  schema,
  capabilities: ['plugin_code'],

  async load (ctx) {
    const file = logFilePath(ctx.config['reloader.logfile'], ctx.root)
    if (file !== undefined) {
      await mkdir(dirname(file), { recursive: true }).catch((err: Error) => {
        throw new Error(`reloader.logfile: ${file}: ${err.message}`)
      })
    }
    const log = reloadLog(file, ctx.logger)
    ctx.onUnload(log.flushed)
    const reloader = reloads(ctx, ctx.capability('plugin_code'), log)
    ctx.commands.add(reloadCommand(reloader))
    ctx.routes.add(reloadRoute(reloader, () => ctx.node.name, (run) => { ctx.timers.setTimeout(run, 0) }))
    const interval = ctx.config['reloader.interval']
    if (interval > 0) {
      await reloader.baseline()
      ctx.timers.setInterval(() => {
        reloader.check().catch((err: Error) => ctx.logger.error({ err }, 'plugin files check failed'))
      }, interval)
    }
  }
})
