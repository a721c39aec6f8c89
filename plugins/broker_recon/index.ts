// broker_recon: the node's runtime diagnostics for an operator, EMQ X's
// emqx_recon (Erlang's recon library) mapped to Node.js: memory and the V8
// heap spaces, binary memory outside the heap, active handles by type, the
// event-loop delay histogram, garbage collections, the clients holding the
// most (queue, in-flight window, bytes), node_stats sampling and V8 heap
// snapshots written inside the data directory. `broker_ctl recon …` and
// GET /api/v3/nodes/{node}/recon answer from the same figures. README.md
// maps each EMQ X recon command to its counterpart.
import { resolve } from 'node:path'
import { definePlugin, eventLoopProbe, gcProbe } from '../../lib/plugin-kit/index.js'
import { reconCommand } from './command.js'
import { Recon } from './recon.js'
import { reconRoute } from './route.js'
import { schema, type ReconConfig } from './settings.js'

export { schema, type ReconConfig } from './settings.js'
export type { ReconFacts } from './recon.js'

export default definePlugin<ReconConfig>({
  name: 'broker_recon',
  version: '0.1.0',
  description: 'Recon: runtime diagnostics (memory, heap spaces, event loop, GC, handles, top clients, heap snapshots)',
  schema,

  load (ctx) {
    const config = ctx.config
    // the probes run from the load on (released at unload): the event loop and GC figures count from here
    const loop = eventLoopProbe(config['recon.event_loop.resolution'])
    ctx.onUnload(loop.stop)
    const gc = gcProbe()
    ctx.onUnload(gc.stop)
    const recon = new Recon({
      node: ctx.node,
      dataDir: resolve(ctx.root, ctx.node.setting('node.data_dir')),
      loop,
      gc,
      snapshots: config['recon.heapsnapshot'],
      timers: ctx.timers
    })
    ctx.commands.add(reconCommand(recon, config))
    ctx.routes.add(reconRoute(recon, ctx.node.name, config))
    // first at unload (newest first): samplings end, a snapshot being written finishes
    ctx.onUnload(async () => await recon.stop())
  }
})
