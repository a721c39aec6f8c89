// A `broker_ctl` command as the node runs it. The node's own commands and
// the ones plugins add (`ctx.commands.add`) have this one shape.

/** What a command answers: text for a person, data for `--json`. */
export interface CtlOutput { text: string, data: unknown }

/** `[usage, description]`, e.g. `['users add <Username> <Password>', 'Add a user']`. */
export type UsageLine = readonly [string, string]

/**
 * A running command's word to the person waiting at `broker_ctl`: shown on
 * its terminal (stderr, one line that updates), never part of the answer.
 */
export interface CtlProgress {
  /** false when nobody watches (a script, --json without --progress): a command may then answer at once */
  readonly wanted: boolean
  /** aborts when broker_ctl went away (Ctrl-C): stop following, not the operation */
  readonly signal: AbortSignal
  report: (text: string) => void
}

/** Progress nobody asked for. */
export const NO_PROGRESS: CtlProgress = { wanted: false, signal: new AbortController().signal, report: () => {} }

export interface CtlCommand {
  /** the first word, e.g. `users` */
  name: string
  usage: readonly UsageLine[]
  /** `args` are the words after the name; throw CtlError to fail; `progress` (NO_PROGRESS when not given) is for operations a person waits on */
  run: (args: string[], progress?: CtlProgress) => CtlOutput | Promise<CtlOutput>
}

/** Exit statuses of `broker_ctl`. */
export const EXIT = { ok: 0, failed: 1, usage: 2, unreachable: 3 } as const

/** A command that could not be done (exit 1), or was called wrongly (`usage`: exit 2, usage shown). */
export class CtlError extends Error {
  constructor (message: string, readonly exit: 1 | 2 = EXIT.failed) {
    super(message)
    this.name = 'CtlError'
  }
}

export const usageError = (message: string): CtlError => new CtlError(message, EXIT.usage)

export function output (text: string, data: unknown): CtlOutput {
  return { text, data }
}

/** `key : value` lines, keys padded to one column (EMQ X's `~-20s: ~w`). */
export function keyValues (record: object, prefix = ''): string {
  const entries = Object.entries(record)
  const width = Math.max(...entries.map(([k]) => prefix.length + k.length))
  return entries.map(([k, v]) => `${(prefix + k).padEnd(width)} : ${String(v)}`).join('\n')
}

/** `usage` lines as EMQ X prints them: the usage padded to a column, `# description`. */
export function formatUsage (lines: readonly UsageLine[]): string {
  const width = Math.max(48, ...lines.map(([u]) => u.length + 2))
  return lines.map(([u, d]) => `${u.padEnd(width)}# ${d}`).join('\n')
}
