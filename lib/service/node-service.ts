// The names lib/plugins/ still imports from here; the operations are in
// operations.ts, their facts in facts.ts.
import type { NodeOperations } from './operations.js'

export type { ListenerRecord } from './facts.js'

/** The node's operations as plugins see them (`ctx.node`) until the narrow views replace it. */
export type NodeServiceView = NodeOperations
