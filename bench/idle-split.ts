// How idle connections are spread over client worker processes and source
// addresses, so that BENCH_CONNECTIONS=100000 fits: a worker holds one file
// descriptor per socket, and one source address has about 28 000 ephemeral
// ports towards one server port.
import type { Role } from './protocol.js'

/** Most idle connections one client worker holds. */
export const CONNECTIONS_PER_WORKER = 25_000
/** Connections per source address (127.0.0.x) beyond which the next address is used. */
const CONNECTIONS_PER_ADDRESS = 20_000

/** Client workers for `connections` idle connections: two at least (the machine's cores), more past CONNECTIONS_PER_WORKER each. */
export const idleWorkerCount = (connections: number): number => Math.max(2, Math.ceil(connections / CONNECTIONS_PER_WORKER))

type IdleRole = Extract<Role, { kind: 'idle' }>

/** One idle role per worker, ids from `firstId` on, source addresses spread when one would run out of ports. */
export function idleRoles (connections: number, workers: number, firstId: number, options: Pick<IdleRole, 'keepalive' | 'protocolVersion' | 'clean'>): IdleRole[] {
  const addresses = Math.ceil(connections / CONNECTIONS_PER_ADDRESS)
  const localAddresses = addresses > 1 ? Array.from({ length: addresses }, (_, i) => `127.0.0.${i + 1}`) : undefined
  const each = Math.ceil(connections / workers)
  return Array.from({ length: workers }, (_, i) => {
    const start = Math.min(connections, i * each)
    return { kind: 'idle', connections: Math.min(each, connections - start), firstId: firstId + start, ...options, localAddresses }
  })
}
