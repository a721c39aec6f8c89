// A Redis command setting (`HMGET mqtt_user:%u password`) split into words
// as EMQ X did; each placeholder is filled inside its own word, and every
// word goes to Redis as one bulk-string argument. A user name holding spaces
// or `\r\n` therefore stays one argument and can never add words or commands.
import { fillTemplate, parseTemplate, type QueryValues, type TemplatePart } from '../../lib/plugin-kit/index.js'

export interface CommandTemplate {
  /** the setting as written, for logs */
  text: string
  name: string
  args: TemplatePart[][]
}

export function parseCommand (text: string): CommandTemplate {
  const [name, ...args] = text.trim().split(/\s+/)
  if (name === undefined || name === '') throw new Error('the command is empty')
  if (!/^[A-Za-z][A-Za-z.|_-]*$/.test(name)) throw new Error(`"${name}" is not a Redis command name`)
  return { text: text.trim(), name, args: args.map((arg) => parseTemplate(arg)) }
}

/** The arguments with the client's values filled in; undefined when a placeholder has no value (no lookup is made). */
export function commandArgs (command: CommandTemplate, values: QueryValues): string[] | undefined {
  const args: string[] = []
  for (const parts of command.args) {
    const arg = fillTemplate(parts, values)
    if (arg === undefined) return undefined
    args.push(arg)
  }
  return args
}
