// Health for orchestrators (issue 10): `GET /status` and `GET /status/ready`
// on the management listener, without credentials, as EMQ X 4's `/status`:
// 200 `{node, status: "Running", uptime}` when the node accepts MQTT; 503
// with `status` (where the node is: Starting, Draining, Stopping …) and
// `reasons` (starting, draining, stopping, store_unavailable …) otherwise.
// `/status/ready` is the readiness form: in cluster mode it also needs the
// link to the other nodes (the node's `health({ readiness })`).
import type Hapi from '@hapi/hapi'
import type { NodeOperations } from '../../lib/plugin-kit/admin.js'

function capitalized (word: string): string {
  return word.charAt(0).toUpperCase() + word.slice(1)
}

function answer (node: NodeOperations, readiness: boolean, h: Hapi.ResponseToolkit): Hapi.ResponseObject {
  const health = node.health({ readiness })
  const body = {
    node: node.name,
    status: capitalized(health.status),
    uptime: node.brokerInfo().uptime,
    ...(health.reasons.length === 0 ? {} : { reasons: health.reasons })
  }
  return h.response(JSON.stringify(body)).type('application/json').header('cache-control', 'no-store').code(health.reasons.length === 0 ? 200 : 503)
}

export function statusRoutes (node: NodeOperations): Hapi.ServerRoute[] {
  return [
    { method: 'GET', path: '/status', options: { auth: false }, handler: (_request, h) => answer(node, false, h) },
    { method: 'GET', path: '/status/ready', options: { auth: false }, handler: (_request, h) => answer(node, true, h) }
  ]
}
