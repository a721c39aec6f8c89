// What a CONNECT brings or takes over beyond its credentials, checked once the
// client is authenticated: its will must be on a topic it may publish (never
// $SYS), else the connection is refused, as EMQ X does (CONNACK 5 / 0x87); and,
// with mqtt.session_owner_check, a persistent session is resumed only by the
// user name that owns it (or a superuser). The owner is stored per client id
// in the node's store, so the check holds across restarts and cluster nodes.
import type { Config } from '../config/store.js'
import type { TextStore } from '../engine/text-store.js'
import type { AccessControl } from './access-control.js'
import type { ClientState } from './client-state.js'
import { setWillOwner } from './will-owner.js'

/** What the engine's client tells of its CONNECT (set by Aedes before authentication). */
export interface ConnectingClient {
  _will?: { topic: string } | null
  /** Clean Start / Clean Session */
  _cleanStart: boolean
  /** the session ends with the connection */
  clean: boolean
}

export type GuardRefusal = string

interface Owner { username: string | null }

export class SessionGuard {
  constructor (
    private readonly config: Config,
    private readonly access: AccessControl,
    private readonly owners: TextStore,
    /** the client id has a stored session to resume */
    private readonly hasSession: (clientId: string) => Promise<boolean>
  ) {}

  /** Why the connection is refused, or undefined when it may go on (then the session's owner is recorded). */
  async admit (client: ConnectingClient, state: ClientState): Promise<GuardRefusal | undefined> {
    const will = client._will
    if (will != null) {
      if (!await this.#mayPublish(state, will.topic)) return `will topic not authorized: ${will.topic}`
      setWillOwner(will, state.info)
    }
    const { clientId, username, isSuperuser } = state.info
    let foreign = false
    if (!client._cleanStart && await this.hasSession(clientId)) {
      const owner = await this.#owner(clientId)
      foreign = owner !== undefined && owner.username !== (username ?? null)
      if (foreign && !isSuperuser && this.config.get('mqtt.session_owner_check')) {
        return `session of client ${clientId} belongs to another user`
      }
    }
    // a superuser looking into another user's session leaves it theirs
    if (!foreign) await this.#record(clientId, username, !client.clean)
    return undefined
  }

  async #mayPublish (state: ClientState, topic: string): Promise<boolean> {
    if (topic.startsWith('$SYS')) return false
    try {
      return await this.access.check(state, 'publish', topic)
    } catch {
      return false
    }
  }

  async #owner (clientId: string): Promise<Owner | undefined> {
    const stored = await this.owners.get(clientId)
    return stored === undefined ? undefined : JSON.parse(stored) as Owner
  }

  async #record (clientId: string, username: string | undefined, persistent: boolean): Promise<void> {
    if (persistent) await this.owners.put(clientId, JSON.stringify({ username: username ?? null }))
    else await this.owners.del(clientId)
  }
}
