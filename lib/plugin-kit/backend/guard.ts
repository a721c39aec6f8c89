// Every call a database auth plugin makes to its server goes through a
// BackendGuard: the call answers within `timeoutMs` (a slow server never
// holds a CONNECT longer; a late answer is dropped), errors are returned,
// not thrown, and an outage is told once — one warning and the alarm
// `<plugin>_unavailable` — until a call that started after the outage began
// succeeds, which logs the recovery and clears the alarm.
import type { Logger } from '../../log.js'
import type { PluginContext } from '../contract.js'

export interface GuardOptions {
  plugin: string
  /** names the server in logs and the alarm, e.g. `MySQL 127.0.0.1:3306` */
  server: string
  timeoutMs: number
  alarms: PluginContext<unknown>['alarms']
  logger: Logger
}

export type GuardResult<T> = { ok: true, value: T } | { ok: false, error: Error }

export class BackendTimeoutError extends Error {
  readonly code = 'ETIMEDOUT'
  constructor (server: string, timeoutMs: number) {
    super(`${server} did not answer within ${timeoutMs}ms`)
    this.name = 'BackendTimeoutError'
  }
}

export class BackendGuard {
  readonly alarmId: string
  readonly #options: GuardOptions
  /** calls started so far; an outage remembers the count when it began */
  #started = 0
  #outageSince: number | undefined
  #closed = false
  /** the calls not answered yet: each settles with an error when the guard closes, so none holds its CONNECT for ever */
  readonly #pending = new Map<NodeJS.Timeout, (result: GuardResult<never>) => void>()

  constructor (options: GuardOptions) {
    this.#options = options
    this.alarmId = `${options.plugin}_unavailable`
  }

  get unavailable (): boolean {
    return this.#outageSince !== undefined
  }

  async run<T> (operation: () => Promise<T>): Promise<GuardResult<T>> {
    const seq = ++this.#started
    let timer: NodeJS.Timeout | undefined
    if (this.#closed) return { ok: false, error: new Error(`${this.#options.plugin} is unloaded`) }
    const timeout = new Promise<GuardResult<T>>((resolve) => {
      timer = setTimeout(() => {
        resolve({ ok: false, error: new BackendTimeoutError(this.#options.server, this.#options.timeoutMs) })
      }, this.#options.timeoutMs)
      this.#pending.set(timer, resolve)
    })
    const call = (async (): Promise<GuardResult<T>> => {
      try {
        return { ok: true, value: await operation() }
      } catch (err) {
        return { ok: false, error: err instanceof Error ? err : new Error(String(err)) }
      }
    })()
    const result = await Promise.race([call, timeout])
    clearTimeout(timer)
    this.#pending.delete(timer!)
    if (result.ok) this.#succeeded(seq)
    else this.#failed(result.error)
    return result
  }

  /** Stops telling outages (the plugin unloads); the alarm is cleared. */
  close (): void {
    this.#closed = true
    // a call its server never answers (its connection closed under it) would otherwise wait for ever
    for (const [timer, settle] of this.#pending) {
      clearTimeout(timer)
      settle({ ok: false, error: new Error(`${this.#options.plugin} is unloaded`) })
    }
    this.#pending.clear()
    if (this.#outageSince !== undefined) this.#options.alarms.clear(this.alarmId)
    this.#outageSince = undefined
  }

  #failed (error: Error): void {
    if (this.#closed) return
    const { logger, server, plugin } = this.#options
    if (this.#outageSince !== undefined) {
      logger.debug({ server, error: error.message }, `${server} failed again`)
      return
    }
    this.#outageSince = this.#started
    logger.warn({ server, error: error.message }, `${server} unavailable; its queries fail until it answers again`)
    this.#options.alarms.raise({
      id: this.alarmId,
      severity: 'warning',
      title: `${plugin}: ${server} unavailable`,
      summary: `${server} unavailable: ${error.message}`
    })
  }

  #succeeded (seq: number): void {
    if (this.#closed || this.#outageSince === undefined || seq <= this.#outageSince) return
    this.#outageSince = undefined
    this.#options.logger.info({ server: this.#options.server }, `${this.#options.server} answers again`)
    this.#options.alarms.clear(this.alarmId)
  }
}

/**
 * The guard of one load's server, released with the load: at unload it stops
 * telling outages (its alarm is cleared), then `close` ends the connections.
 * Call it right after opening the connections, so a load that fails later
 * closes them too.
 */
export function backendGuard (ctx: Pick<PluginContext<unknown>, 'name' | 'alarms' | 'logger' | 'onUnload'>, server: string, timeoutMs: number, close: () => unknown): BackendGuard {
  const guard = new BackendGuard({ plugin: ctx.name, server, timeoutMs, alarms: ctx.alarms, logger: ctx.logger })
  ctx.onUnload(async () => {
    guard.close()
    await close()
  })
  return guard
}
