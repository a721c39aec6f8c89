// A stand-in for the node's operations for tests of the server alone: the given members,
// and the one-node cluster over them that the routes call.
import { singleNodeCluster, type NodeOperations } from '../../../lib/plugin-kit/admin.js'

export function withCluster<T extends { name: string }> (node: T): T & { cluster: NodeOperations['cluster'] } {
  const service = node as unknown as NodeOperations
  // a running node with its store, unless the test says otherwise
  const health = (node as Partial<NodeOperations>).health ?? ((): ReturnType<NodeOperations['health']> => ({ status: 'running', reasons: [] }))
  return Object.assign(node, { cluster: singleNodeCluster(service, Date.now(), 'fake-engine'), health })
}
