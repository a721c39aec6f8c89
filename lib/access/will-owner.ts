// Who a will belongs to. A will can be published long after its client left
// (a will delay, a node killed and restarted, a dead node's wills swept by
// another): the owner's identity is stored with the will (in the engine's
// persistence and the timer store) so that it is authorized as its owner,
// with the owner's mountpoint, whenever it is published.
import type { ClientInfo } from '../hooks/types.js'

const OWNER = 'willOwner'

export function setWillOwner (will: object, info: ClientInfo): void {
  (will as Record<string, unknown>)[OWNER] = { ...info }
}

/** The owner stored with a will; undefined for any other packet. */
export function willOwner (packet: object): ClientInfo | undefined {
  const owner = (packet as Record<string, unknown>)[OWNER] as (Omit<ClientInfo, 'username'> & { username?: string | null }) | undefined
  if (owner === undefined || owner === null) return undefined
  // a stored user name of undefined comes back from the store as null
  return { ...owner, username: owner.username ?? undefined }
}
