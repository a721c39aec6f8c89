// What SIGHUP reloads on a running node without dropping a client, as
// Mosquitto does: the configuration files read again (live settings applied,
// e.g. the log levels; the others named as waiting for a restart), the ACL
// file, the TLS listeners' key and certificates (for new connections) and the
// active plugins' settings (etc/plugins/, data/plugins/). Each part goes
// through the path the API and broker_ctl use; a part that fails is reported
// and the others still reload.
import type { Config } from './config/store.js'
import { renewTls, type TlsRenewal } from './listeners/index.js'
import type { Listener } from './listeners/listener.js'
import type { Logger } from './log.js'
import type { PluginHost, SettingsReload } from './plugins/host.js'
import { SECRET_SETTINGS } from './service/node-status.js'
import type { NodeOperations } from './service/operations.js'

/** The running parts a reload reaches. */
export interface ReloadTargets {
  config: Config
  logger: Logger
  listeners: readonly Listener[]
  service: Pick<NodeOperations, 'reloadAcl'>
  plugins: Pick<PluginHost, 'reloadChangedSettings'>
  /** the install root the TLS files are relative to */
  root: string
}

export interface ReloadReport {
  /** settings whose value in the sources changed, applied now */
  applied: Array<{ key: string, value: string, origin: string }>
  /** settings whose value in the sources changed that apply at the next start */
  atRestart: string[]
  /** why the configuration was not read (the rest still reloaded) */
  configError?: string
  /** rules read from the ACL file, or why it was not (the rules in force kept) */
  acl: { rules: number } | { error: string }
  tls: TlsRenewal[]
  /** the plugins whose settings changed (or were refused) */
  plugins: SettingsReload[]
}

/** The raw value each setting has in the sources (files, overrides, environment, --set). */
function sourceValues (config: Config): Map<string, { value: string, origin: string, kind: string }> {
  return new Map(config.items().map(({ key, value, origin, kind }) => [key, { value, origin, kind }]))
}

export class NodeReload {
  /** what the sources said at start or at the last reload: a value changed at run time (API, broker_ctl) stays until the sources change it */
  #sources: ReturnType<typeof sourceValues>
  #running: Promise<ReloadReport> | undefined

  /** `load` reads the configuration sources as the start did. */
  constructor (private readonly targets: ReloadTargets, private readonly load: () => Promise<Config>) {
    this.#sources = sourceValues(targets.config)
  }

  /** Reloads once; a call while one runs waits for it and then reloads again (the files may have changed since it read them). */
  async reload (): Promise<ReloadReport> {
    const previous = this.#running
    const run = (async () => {
      await previous?.catch(() => {})
      return await this.#reload()
    })()
    this.#running = run
    return await run
  }

  async #reload (): Promise<ReloadReport> {
    const { config, logger, listeners, service, plugins, root } = this.targets
    const report: ReloadReport = { applied: [], atRestart: [], acl: { rules: 0 }, tls: [], plugins: [] }
    try {
      this.#applySettings(await this.load(), report)
    } catch (err) {
      report.configError = (err as Error).message
      logger.error({ err: report.configError }, 'configuration not reloaded: the settings in force are kept')
    }
    try {
      report.acl = { rules: await service.reloadAcl() }
    } catch (err) {
      report.acl = { error: (err as Error).message }
      logger.error({ err: report.acl.error }, 'acl file not reloaded: the rules in force are kept')
    }
    report.tls = await renewTls(listeners, config, root)
    for (const renewal of report.tls) {
      if (renewal.error !== undefined) logger.error({ listener: renewal.listener, err: renewal.error }, 'TLS certificate not reloaded: the listener serves the one it had')
      else if (renewal.changed) logger.info({ listener: renewal.listener }, 'TLS certificate reloaded: new connections get the new one')
    }
    report.plugins = (await plugins.reloadChangedSettings()).filter(({ outcome }) => outcome !== 'unchanged')
    for (const { plugin, outcome, error } of report.plugins) {
      if (error !== undefined) logger.error({ plugin, err: error }, 'plugin settings not reloaded')
      else logger.info({ plugin, outcome }, `plugin settings reloaded (${outcome})`)
    }
    logger.info({
      settings: report.applied.map(({ key }) => key),
      atRestart: report.atRestart,
      acl: report.acl,
      tls: report.tls.filter(({ changed }) => changed).map(({ listener }) => listener),
      plugins: report.plugins.map(({ plugin, outcome }) => `${plugin}: ${outcome}`)
    }, 'reload done')
    return report
  }

  /** Applies the live settings whose value in the sources changed since the last load; the others are named for the next start. */
  #applySettings (fresh: Config, report: ReloadReport): void {
    const { config, logger } = this.targets
    const now = sourceValues(fresh)
    for (const key of new Set([...this.#sources.keys(), ...now.keys()])) {
      const before = this.#sources.get(key)
      const after = now.get(key)
      if (before?.value === after?.value) continue
      const shown = SECRET_SETTINGS.has(key) ? '******' : after?.value
      // a key the running node did not have (a listener named since it started) waits for a restart too
      if (before === undefined || after === undefined || after.kind !== 'live') {
        report.atRestart.push(key)
        logger.warn({ key, value: shown, origin: after?.origin }, 'setting changed in the configuration: it applies at the next start')
        continue
      }
      config.set(key, after.value, after.origin)
      report.applied.push({ key, value: after.value, origin: after.origin })
      logger.info({ key, value: shown, origin: after.origin }, 'setting changed by the reload')
    }
    this.#sources = now
  }
}
