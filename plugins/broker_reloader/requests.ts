// How an operator asks for a reload now: `broker_ctl reload <Plugin>` (EMQ X's
// `emqx_ctl reload <Module>`) on this node, and
// `PUT /api/v3/nodes/{node}/plugins/{plugin}/reload` on any node of the cluster.
import { CtlError, output, RouteError, usageError, type CtlCommand, type PluginRoute } from '../../lib/plugin-kit/index.js'
import type { Outcome, RefusalKind, Reloads } from './reloads.js'

/** The management API's answer to each refusal: HTTP status and SPEC §7 code (101 badrpc, 102 unknown error). */
const REFUSED: Readonly<Record<RefusalKind, { status: number, code: number }>> = Object.freeze({
  self: { status: 400, code: 102 },
  not_found: { status: 404, code: 102 },
  failed: { status: 500, code: 102 },
  badrpc: { status: 502, code: 101 }
})

/** The API plugin serves the route: reloading it while it answers would close the answering connection. */
const API_PLUGIN = 'broker_management'

function described (outcome: Extract<Outcome, { ok: true }>): string {
  const { plugin, version, active } = outcome.result
  return `Plugin ${plugin} reloaded successfully (version ${version}${active ? '' : '; it is not running: the new code is used at its next load'}).`
}

export function reloadCommand (reloads: Reloads): CtlCommand {
  return {
    name: 'reload',
    usage: [['reload <Plugin>', 'Reload a plugin\'s code from its files now (same settings; MQTT clients stay connected)']],
    run: async (args) => {
      if (args.length !== 1) throw usageError(`bad arguments: ${args.join(' ')}`)
      const outcome = await reloads.reload(args[0], 'ctl')
      if (!outcome.ok) throw new CtlError(`reload plugin error: ${outcome.reason}`)
      return output(described(outcome), outcome.result)
    }
  }
}

export function reloadRoute (reloads: Reloads, self: () => string, later: (run: () => void) => void): PluginRoute {
  return {
    method: 'PUT',
    path: '/nodes/{node}/plugins/{plugin}/reload',
    access: 'write',
    summary: 'Reload a plugin\'s code on a node (broker_reloader)',
    handler: async ({ params }) => {
      const { node, plugin } = params
      if (plugin === API_PLUGIN && node === self()) {
        // answered first; the outcome goes to the reload log
        later(() => { void reloads.reload(plugin, 'api', node) })
        return { node, plugin, reload: 'started' }
      }
      const outcome = await reloads.reload(plugin, 'api', node)
      if (!outcome.ok) {
        const { status, code } = REFUSED[outcome.kind]
        throw new RouteError(code, outcome.reason, status)
      }
      return { node, ...outcome.result }
    }
  }
}
