// The commands `broker_ctl` can run on this node, each with its owner (the
// node, or the plugin that added it and loses it when it unloads).
import { CtlError, formatUsage, NO_PROGRESS, usageError, type CtlCommand, type CtlOutput, type CtlProgress } from './command.js'
import { PLUGIN_COMMANDS } from './usage.js'

/** `unknown command: users (broker_auth_username adds it: …)` */
function unknown (name: string): CtlError {
  const plugin = PLUGIN_COMMANDS.find(([command]) => command === name)?.[1]
  const hint = plugin === undefined ? '' : ` (${plugin} adds it: broker_ctl plugins load ${plugin})`
  return usageError(`unknown command: ${name}${hint}`)
}

export const NODE_OWNER = 'node'

export class CommandRegistry {
  readonly #commands = new Map<string, { owner: string, command: CtlCommand }>()

  /** Adds a command; returns its removal. */
  add (command: CtlCommand, owner = NODE_OWNER): () => void {
    const present = this.#commands.get(command.name)
    if (present !== undefined && present.owner !== owner) throw new Error(`broker_ctl command ${command.name} belongs to ${present.owner} already`)
    const entry = { owner, command }
    this.#commands.set(command.name, entry)
    return () => {
      if (this.#commands.get(command.name) === entry) this.#commands.delete(command.name)
    }
  }

  list (): CtlCommand[] {
    return [...this.#commands.values()].map(({ command }) => command).sort((a, b) => a.name.localeCompare(b.name))
  }

  get (name: string): CtlCommand | undefined {
    return this.#commands.get(name)?.command
  }

  /** Runs `argv` (`['clients', 'kick', 'c1']`); an unknown command is a usage error. */
  async run (argv: string[], progress: CtlProgress = NO_PROGRESS): Promise<CtlOutput> {
    const [name, ...args] = argv
    const command = name === undefined ? undefined : this.get(name)
    if (command === undefined) throw name === undefined ? usageError('no command given') : unknown(name)
    try {
      return await command.run(args, progress)
    } catch (err) {
      if (err instanceof CtlError) throw err
      throw new CtlError(`${name}: ${(err as Error).message}`)
    }
  }
}

/** `help [<Command>]`: the usage of every command the node runs now (plugins' included), or of one. */
export function helpCommand (registry: CommandRegistry): CtlCommand {
  return {
    name: 'help',
    usage: [['help [<Command>]', 'Show the usage of every command, or of one']],
    run: ([name, ...rest]) => {
      if (rest.length > 0) throw usageError('help takes at most one command')
      const commands = name === undefined ? registry.list() : [registry.get(name)].filter((c): c is CtlCommand => c !== undefined)
      if (commands.length === 0) throw unknown(name ?? '')
      const usage = commands.flatMap((c) => c.usage)
      return { text: formatUsage(usage), data: usage.map(([command, description]) => ({ command, description })) }
    }
  }
}
