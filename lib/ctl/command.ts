// A `broker_ctl` command as the node runs it. The node's own commands and
// the ones plugins add (`ctx.commands.add`) have this one shape.

/** What a command answers: text for a person, data for `--json`. */
export interface CtlOutput { text: string, data: unknown }

/** `[usage, description]`, e.g. `['users add <Username> <Password>', 'Add a user']`. */
export type UsageLine = readonly [string, string]

export interface CtlCommand {
  /** the first word, e.g. `users` */
  name: string
  usage: readonly UsageLine[]
  /** `args` are the words after the name; throw CtlError to fail */
  run: (args: string[]) => CtlOutput | Promise<CtlOutput>
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
