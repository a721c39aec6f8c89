// What a CONNECT brings or takes over beyond its credentials, checked once the
// client is authenticated: its will must be on a topic it may publish (never
// $SYS), else the connection is refused, as EMQ X does (CONNACK 5 / 0x87); and,
// with mqtt.session_owner_check, a persistent session is resumed only by the
// user name that owns it (or a superuser). The owner is stored per client id
// in the node's store, so the check holds across restarts and cluster nodes.
import type { Config } from '../config/store.js'
import type { ConnectingClient } from '../engine/internals.js'
import type { TextStore } from '../engine/text-store.js'
import type { AccessControl } from './access-control.js'
import type { ClientState } from './client-state.js'
import { setWillOwner } from './will-owner.js'

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
  async admit (client: ConnectingClient, state: ClientState): Promise<string | undefined> {
    const will = client._will
    if (will != null) {
      if (!await this.#mayPublish(state, will.topic)) return `will topic not authorized: ${will.topic}`
      setWillOwner(will, state.info)
    }
    const { clientId, isSuperuser } = state.info
    const username = state.info.username ?? null
    // a record of a session that is gone (expired, or ended by a clean start) is only overwritten
    const owner = !client._cleanStart && await this.hasSession(clientId) ? await this.#owner(clientId) : undefined
    if (owner !== undefined && owner.username !== username) {
      if (!isSuperuser && this.config.get('mqtt.session_owner_check')) return `session of client ${clientId} belongs to another user`
      // a superuser looking into another user's session leaves it theirs
      return undefined
    }
    if (!client.clean && owner === undefined) await this.owners.put(clientId, JSON.stringify({ username }))
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
}
