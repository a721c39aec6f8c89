// `broker_ctl luahook …`: EMQ X's lua_hook commands (load, unload, reload,
// enable, disable <Script>) and `list`. <Script> is a file name in the script
// folder, with or without `.lua`.
import { CtlError, output, usageError, type CtlCommand, type CtlOutput } from '../../lib/plugin-kit/index.js'
import { ScriptError, type ScriptRow, type ScriptSet } from './scripts.js'

const USAGE = Object.freeze([
  ['luahook list', 'List the lua scripts of the script folder and what they do'],
  ['luahook load <Script>', 'Load a lua script into the hooks'],
  ['luahook unload <Script>', 'Unload a lua script from the hooks'],
  ['luahook reload <Script>', 'Read a lua script again and load it into the hooks'],
  ['luahook enable <Script>', 'Rename <Script>.lua.x to <Script>.lua and load it'],
  ['luahook disable <Script>', 'Unload a lua script and rename it to <Script>.lua.x (not loaded at start)']
] as const)

function row (r: ScriptRow): string {
  const parts = [r.file, r.status]
  if (r.hooks.length > 0) parts.push(`hooks=${r.hooks.join(',')}`)
  if (r.stats !== undefined) parts.push(`calls=${r.stats.calls}`, `errors=${r.stats.errors}`, `timeouts=${r.stats.timeouts}`, `skipped=${r.stats.skipped}`)
  if (r.memory !== undefined) parts.push(`memory=${r.memory}`)
  if (r.error !== undefined) parts.push(`error=${JSON.stringify(r.error)}`)
  return parts.join('  ')
}

export function luahookCommand (scripts: ScriptSet): CtlCommand {
  const act = async (verb: string, name: string, run: () => Promise<unknown>): Promise<CtlOutput> => {
    try {
      await run()
    } catch (err) {
      if (err instanceof ScriptError) throw new CtlError(`${verb} ${JSON.stringify(name)} failed: ${err.message}`)
      throw err
    }
    return output(`${verb} ${JSON.stringify(name)} successfully`, { script: name, result: 'ok' })
  }
  return {
    name: 'luahook',
    usage: USAGE,
    run: async ([sub, name, ...rest]) => {
      if (sub === 'list' && name === undefined) {
        const rows = await scripts.list()
        return output(rows.length === 0 ? `no scripts in ${scripts.dir}` : rows.map(row).join('\n'), rows)
      }
      if (name === undefined || rest.length > 0) throw usageError(USAGE.map(([u]) => u).join(' | '))
      switch (sub) {
        case 'load': return await act('Load', name, async () => await scripts.load(name))
        case 'unload': return await act('Unload', name, async () => { await scripts.unload(name) })
        case 'reload': return await act('Reload', name, async () => await scripts.reload(name))
        case 'enable': return await act('Enable', name, async () => await scripts.enable(name))
        case 'disable': return await act('Disable', name, async () => { await scripts.disable(name) })
        default: throw usageError(USAGE.map(([u]) => u).join(' | '))
      }
    }
  }
}
