// The log of reloads (`reloader.logfile`, EMQ X's log/reloader.log): one line
// per reload tried, appended in order, and the same in the node's log.
import { appendFile } from 'node:fs/promises'
import { rfc3339, type CodeReplaced, type Logger } from '../../lib/plugin-kit/index.js'

/** Who asked: the interval check, `broker_ctl reload`, or the API route. */
export type ReloadCause = 'interval' | 'ctl' | 'api'

export type ReloadOutcome = { ok: true, result: CodeReplaced } | { ok: false, reason: string }

export interface ReloadEvent { plugin: string, node: string, by: ReloadCause, outcome: ReloadOutcome }

/** `2024-05-01T10:00:00.000+00:00 broker_x@node1 by ctl: reloaded, version 1.0.1, running` (one line: a reason's line breaks become spaces). */
export function reloadLine (event: ReloadEvent, at: Date): string {
  const { outcome } = event
  const what = outcome.ok
    ? `reloaded, version ${outcome.result.version}, ${outcome.result.active ? 'running' : 'not running (the new code is used at its next load)'}`
    : `failed: ${outcome.reason.replace(/\s*\n\s*/g, ' ')}`
  return `${rfc3339(at)} ${event.plugin}@${event.node} by ${event.by}: ${what}\n`
}

export interface ReloadLog {
  record: (event: ReloadEvent) => void
  /** resolves once every line recorded so far is written */
  flushed: () => Promise<void>
}

/** Writes to `file` (none when undefined) and to `logger`; a line that cannot be written is reported in the node's log. */
export function reloadLog (file: string | undefined, logger: Logger): ReloadLog {
  let pending: Promise<void> = Promise.resolve()
  return {
    record (event) {
      const { plugin, node, by, outcome } = event
      if (outcome.ok) logger.info({ plugin, node, by, version: outcome.result.version, active: outcome.result.active }, 'plugin code reloaded')
      else logger.error({ plugin, node, by, reason: outcome.reason }, 'plugin code reload failed')
      if (file === undefined) return
      const line = reloadLine(event, new Date())
      pending = pending.then(async () => await appendFile(file, line, { mode: 0o640 })).catch((err: Error) => {
        logger.warn({ err, file }, 'reloader.logfile: line not written')
      })
    },
    flushed: async () => { await pending }
  }
}
