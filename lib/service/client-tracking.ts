// What the node remembers about clients beyond the engine: when each one
// connected, how many messages each session dropped, the expiry interval of
// each persistent session whose client left, and how many connections each
// listener had kicked. Read by the client queries and the listener listing.
import type { Aedes, Client } from 'aedes'
import { onMessageDropped, type EngineClient } from '../engine/internals.js'
import type { Config } from '../config/store.js'

export class ClientTracking {
  readonly #connectedAt = new WeakMap<Client, number>()
  /** clients sent an accepted CONNACK: online from then on, while the engine may still replay their session's queue */
  readonly #accepted = new WeakSet<Client>()
  readonly #dropped = new Map<string, number>()
  readonly #kicked = new Map<string, number>()
  /** the expiry interval (seconds) of each persistent session whose client left, for its offline facts */
  readonly #offlineExpiry = new Map<string, number>()

  constructor (engine: Aedes, private readonly config: Config) {
    engine.on('clientReady', (client: Client) => this.#connectedAt.set(client, Date.now()))
    engine.on('connackSent', (packet: { returnCode?: number, reasonCode?: number }, client: Client) => {
      if ((packet.reasonCode ?? packet.returnCode) === 0) this.#accepted.add(client)
    })
    engine.on('clientDisconnect', (client: Client) => {
      if (client.clean) this.#dropped.delete(client.id)
      const expiry = this.expiryInterval(client as EngineClient)
      if (expiry > 0) this.#offlineExpiry.set(client.id, expiry)
      else this.#offlineExpiry.delete(client.id)
    })
    onMessageDropped(engine, (_packet, client) => this.#dropped.set(client.id, (this.#dropped.get(client.id) ?? 0) + 1))
  }

  /**
   * Connected and not closed: from the accepted CONNACK on, as EMQ X registers a channel before its CONNACK. The
   * engine marks a client connected only once its session's queue is replayed, which waits for the client to read.
   */
  isOnline (client: Client): boolean {
    return !client.closed && (client.connected || this.#accepted.has(client))
  }

  /** ms since the epoch; now for a client not yet seen ready */
  connectedAt (client: Client): number {
    return this.#connectedAt.get(client) ?? Date.now()
  }

  dropped (clientId: string): number {
    return this.#dropped.get(clientId) ?? 0
  }

  offlineExpiry (clientId: string): number | undefined {
    return this.#offlineExpiry.get(clientId)
  }

  /** Clients kicked off one listener (its id, e.g. `mqtt:tcp:internal`). */
  kicked (listener: string): number {
    return this.#kicked.get(listener) ?? 0
  }

  noteKicked (listener: string): void {
    this.#kicked.set(listener, this.kicked(listener) + 1)
  }

  /** Seconds the session outlives its connection: 0 for a clean one, a v5 client's own interval, else the zone's. */
  expiryInterval (client: EngineClient): number {
    const persistent = !client.clean || (client.version === 5 && client.sessionExpiryInterval > 0)
    if (!persistent) return 0
    return client.version === 5 ? client.sessionExpiryInterval : this.zoneExpiryInterval()
  }

  /** `zone.external.session_expiry_interval` in seconds */
  zoneExpiryInterval (): number {
    return Math.round(this.config.get('zone.external.session_expiry_interval') / 1000)
  }
}
