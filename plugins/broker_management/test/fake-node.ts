// A stand-in node service for tests of the server alone: the given members,
// and the one-node cluster over them that the routes call.
import { singleNodeCluster, type NodeService } from '../../../lib/plugin-kit/admin.js'

export function withCluster<T extends { name: string }> (node: T): T & { cluster: NodeService['cluster'] } {
  const service = node as unknown as NodeService
  return Object.assign(node, { cluster: singleNodeCluster(service, Date.now(), 'fake-engine') })
}
