// The API: `GET /api/v3/delayed` (paged as the API's other listings: `_page`,
// `_limit` → `{items, meta: {count, limit, page}}`), `GET /api/v3/delayed/{msgid}`
// (with the payload, base64) and `DELETE /api/v3/delayed/{msgid}`.
import { RouteError, type PluginRoute } from '../../lib/plugin-kit/index.js'
import type { DelayedMessages } from './keeper.js'
import { present } from './present.js'
import { isId } from './record.js'

/** the page size when `_limit` is not given, and the largest (management.max_row_limit's default) */
export const MAX_ROWS = 10000
/** SPEC §7.2 code of a parameter with the wrong type (the API's own for a bad query) */
const WRONG_TYPE = 108

function positive (query: Record<string, string>, key: string): number | undefined {
  const text = query[key]
  if (text === undefined) return undefined
  if (!/^[0-9]{1,9}$/.test(text) || Number(text) < 1) throw new RouteError(WRONG_TYPE, `${key} must be a whole number from 1`)
  return Number(text)
}

function known (id: string): string {
  if (!isId(id)) throw new RouteError(undefined, `no delayed message ${id}`, 404)
  return id
}

export function delayedRoutes (messages: DelayedMessages): PluginRoute[] {
  return [
    {
      method: 'GET',
      path: '/delayed',
      access: 'read',
      summary: 'List the delayed messages, paged by _page and _limit (broker_delayed_publish)',
      handler: async ({ query }) => {
        const page = positive(query, '_page') ?? 1
        const limit = Math.min(positive(query, '_limit') ?? MAX_ROWS, MAX_ROWS)
        const { count, entries } = await messages.list((page - 1) * limit, limit)
        const now = Date.now()
        return { items: entries.map(({ id, message }) => present(id, message, now)), meta: { count, limit, page } }
      }
    },
    {
      method: 'GET',
      path: '/delayed/{msgid}',
      access: 'read',
      summary: 'One delayed message, its payload in base64 (broker_delayed_publish)',
      handler: async ({ params }) => {
        const id = known(params.msgid)
        const message = await messages.get(id)
        if (message === undefined) throw new RouteError(undefined, `no delayed message ${id}`, 404)
        return { ...present(id, message), payload: message.payload.toString('base64') }
      }
    },
    {
      method: 'DELETE',
      path: '/delayed/{msgid}',
      summary: 'Drop a delayed message (broker_delayed_publish)',
      handler: async ({ params }) => {
        const id = known(params.msgid)
        if (!await messages.remove(id)) throw new RouteError(undefined, `no delayed message ${id}`, 404)
        return 'ok'
      }
    }
  ]
}
