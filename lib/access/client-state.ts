// What the node keeps per connected client beside Aedes' own state: the
// ClientInfo hooks see, and the client's ACL cache.
import type { Client } from 'aedes'
import type { ClientInfo } from '../hooks/types.js'
import { connInfo } from '../listeners/conn-info.js'
import { AclCache } from './acl-cache.js'

export interface ClientState {
  info: ClientInfo
  aclCache: AclCache
  /** mounted filters of the resumed session that its new connection may no longer read */
  withdrawn?: string[]
}

const states = new WeakMap<Client, ClientState>()

export function setClientState (client: Client, info: ClientInfo): ClientState {
  const state = detachedState(info)
  states.set(client, state)
  return state
}

/** The state of a client that is not connected (the owner of a will published after it left). */
export function detachedState (info: ClientInfo): ClientState {
  return { info, aclCache: new AclCache() }
}

export function clientState (client: Client): ClientState | undefined {
  return states.get(client)
}

/** What the hooks see of a connecting client, from the engine's client and its transport. */
export function clientInfoOf (client: Client, username: string | undefined): ClientInfo {
  const conn = connInfo(client.conn)
  const info: ClientInfo = {
    clientId: client.id,
    username,
    ipAddress: conn?.ipAddress ?? 'undefined',
    port: conn?.port ?? 0,
    protocol: conn?.protocol ?? 'mqtt:tcp',
    protoVer: client.version,
    peercert: conn?.peercert ?? 'nossl',
    mountpoint: '',
    isSuperuser: false
  }
  // a protocol gateway's client says what it is (only then: an MQTT client's ClientInfo has no such key)
  if (conn?.protoName !== undefined) info.gateway = { protoName: conn.protoName, protoVer: conn.protoVer ?? client.version }
  return info
}
