// `broker_ctl users …` / `broker_ctl clientid …` (EMQ X 3.x emqx_auth_username
// and emqx_auth_clientid CLIs) over a loaded credential table.
import { CtlError, output, usageError, type CtlCommand } from '../ctl/command.js'
import type { CredentialTable } from './credentials.js'

export function credentialCommand (table: CredentialTable): CtlCommand {
  const { name, id } = table.kind.command
  const noun = table.kind.noun
  const change = async (operation: () => Promise<void>): Promise<void> => {
    try {
      await operation()
    } catch (err) {
      const code = (err as { code?: string }).code
      if (code === 'invalid') throw usageError(`Error: ${(err as Error).message}`)
      if (code === 'exists' || code === 'missing' || code === 'configured') throw new CtlError(`Error: ${(err as Error).message}`)
      throw err
    }
  }
  return {
    name,
    usage: [
      [`${name} list`, `List ${noun}s`],
      [`${name} add ${id} <Password>`, `Add a ${noun}`],
      [`${name} update ${id} <NewPassword>`, `Update a ${noun}'s password`],
      [`${name} del ${id}`, `Delete a ${noun}`]
    ],
    run: async ([sub, ...args]) => {
      if (sub === 'list' && args.length === 0) {
        const ids = await table.list()
        return output(ids.join('\n'), ids)
      }
      if ((sub === 'add' || sub === 'update') && args.length === 2) {
        const [key, password] = args
        await change(async () => sub === 'add' ? await table.add(key, password) : await table.update(key, password))
        return output('ok', { [table.kind.field]: key, operation: sub })
      }
      if (sub === 'del' && args.length === 1) {
        await change(async () => await table.delete(args[0]))
        return output('ok', { [table.kind.field]: args[0], operation: 'del' })
      }
      throw usageError(`bad arguments: ${[sub, ...args].join(' ')}`)
    }
  }
}
