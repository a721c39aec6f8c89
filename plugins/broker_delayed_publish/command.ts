// `broker_ctl delayed list | delete <msgid>`.
import { CtlError, output, usageError, type CtlCommand } from '../../lib/plugin-kit/index.js'
import type { DelayedMessages } from './keeper.js'
import { line, present } from './present.js'
import { isId } from './record.js'
import { MAX_ROWS } from './routes.js'

const USAGE = 'delayed list | delayed delete <MsgId>'

export function delayedCommand (messages: DelayedMessages): CtlCommand {
  return {
    name: 'delayed',
    usage: [
      ['delayed list', `List the delayed messages, earliest due first (at most ${MAX_ROWS})`],
      ['delayed delete <MsgId>', 'Delete a delayed message: it is never published']
    ],
    run: async (args) => {
      const [sub, id, ...extra] = args
      if (sub === 'list' && id === undefined) {
        const { count, entries } = await messages.list(0, MAX_ROWS)
        const now = Date.now()
        const records = entries.map(({ id, message }) => present(id, message, now))
        const more = count > records.length ? [`(${count - records.length} more; the API pages them: GET /api/v3/delayed?_page=2)`] : []
        return output([...records.map(line), ...more].join('\n') || 'no delayed messages', { count, items: records })
      }
      if (sub === 'delete' && id !== undefined && extra.length === 0) {
        if (!isId(id) || !await messages.remove(id)) throw new CtlError(`no delayed message ${id}`)
        return output('ok', { deleted: id })
      }
      throw usageError(USAGE)
    }
  }
}
