// A node with broker_management, spoken to under /api/v2 as the default administrator user (admin:public).
import { startApiNode, type ApiNode } from './api.js'

export type { ApiNode } from './api.js'

/** The v3 helper's node; `call` paths are under /api/v2 (the URL `…/api/v3/../v2/x` resolves to `…/api/v2/x`). */
export async function startV2Node (...args: Parameters<typeof startApiNode>): Promise<ApiNode> {
  const node = await startApiNode(...args)
  return { ...node, base: node.base.replace(/\/api\/v3$/, '/api/v2'), call: async (method, path, options) => await node.call(method, `/../v2${path}`, options) }
}
