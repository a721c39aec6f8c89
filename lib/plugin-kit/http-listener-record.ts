// An administration plugin's HTTP listener in the node's listener listing
// (SPEC §2.10: `http:management`, `http:dashboard`; v2 shows them as
// `mqtt:api`, `dashboard:http`): address, acceptors, the connection limit
// and how many connections are open now. A connection over `max_clients` is
// dropped by Node.js and counted as `closed`.
import type Hapi from '@hapi/hapi'
import type { ListenerRecord } from '../service/operations.js'

export interface ListenerLimits { acceptors: number, maxClients: number }

/** Applies `maxClients` to the server's socket and returns what the listing reads of it. */
export function listenerRecord (server: Hapi.Server, protocol: string, { acceptors, maxClients }: ListenerLimits): () => ListenerRecord {
  let current = 0
  let closed = 0
  server.listener.maxConnections = maxClients
  server.listener.on('connection', (socket) => {
    current++
    socket.once('close', () => { current-- })
  })
  server.listener.on('drop', () => { closed++ })
  return () => ({
    protocol,
    listen_on: `${server.info.host}:${server.info.port}`,
    acceptors,
    max_conns: maxClients,
    current_conns: current,
    shutdown_count: closed === 0 ? [] : { closed, kicked: 0 }
  })
}
