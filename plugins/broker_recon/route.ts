// GET /api/v3/nodes/{node}/recon: the figures of every `recon` command at
// once (ReconFacts). `?top=N` sets the length of the client lists (default
// recon.top); `?samples=N&interval=Ms` adds node_stats samples. The
// management API sends a request for another node to that node, so the
// answer is always this node's.
import { RouteError, type PluginRoute } from '../../lib/plugin-kit/index.js'
import { nodeStatsRefusal } from './node-stats.js'
import type { Recon } from './recon.js'
import { MAX_TOP, type ReconConfig } from './settings.js'

/** SPEC §7.2's "request parameter has the wrong type" */
const WRONG_TYPE = 108

function integer (query: Record<string, string>, key: string): number | undefined {
  const text = query[key]
  if (text === undefined) return undefined
  if (!/^\d+$/.test(text)) throw new RouteError(WRONG_TYPE, `${key} must be a whole number`)
  return Number(text)
}

export function reconRoute (recon: Recon, node: string, config: Readonly<ReconConfig>): PluginRoute {
  return {
    method: 'GET',
    path: '/nodes/{node}/recon',
    access: 'read',
    summary: 'The figures of every recon command on a node; ?top=N, ?samples=N&interval=Ms (broker_recon)',
    handler: async ({ params, query }) => {
      if (params.node !== node) throw new RouteError(101, `node ${params.node} not found`, 404)
      const unknown = Object.keys(query).filter((k) => !['top', 'samples', 'interval'].includes(k))
      if (unknown.length > 0) throw new RouteError(WRONG_TYPE, `unknown parameter ${unknown.join(', ')} (top, samples, interval)`)
      const top = integer(query, 'top') ?? config['recon.top']
      if (top < 1 || top > MAX_TOP) throw new RouteError(WRONG_TYPE, `top must be 1 to ${MAX_TOP}`)
      const samples = integer(query, 'samples')
      const interval = integer(query, 'interval')
      if (samples === undefined && interval !== undefined) throw new RouteError(WRONG_TYPE, 'interval goes with samples')
      if (samples === undefined) return await recon.all(top)
      const intervalMs = interval ?? 1000
      const refusal = nodeStatsRefusal(samples, intervalMs)
      if (refusal !== undefined) throw new RouteError(WRONG_TYPE, refusal)
      return await recon.all(top, { samples, intervalMs })
    }
  }
}
