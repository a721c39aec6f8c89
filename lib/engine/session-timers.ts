// Session-expiry and will-delay timers that survive a restart (MQTT 5
// §3.1.2.11.2, §3.1.3.2.2; Aedes keeps them in memory only). The Aedes patch
// tells this store when a timer is armed or cleared; on start the node
// restores them: a session whose time passed while the node was down is
// wiped, a will whose time passed is published, the others are re-armed and
// cancelled if their client comes back first.
import type { Aedes, AedesPublishPacket, Client } from 'aedes'
import type { Logger } from '../log.js'
import type { TextStore } from './text-store.js'
import type { TimerOwnership } from '../cluster/timer-ownership.js'

type Kind = 'session' | 'will'
/** The longest delay setTimeout keeps. */
const MAX_TIMER_MS = 2 ** 31 - 1
/** `interval`: the seconds from arming to firing (a session's expiry interval as its client asked, clamped), so a restarted node can tell it */
interface TimerRecord { firesAt: number, interval?: number, will?: Record<string, unknown>, owner?: string }
interface SessionPersistence {
  cleanSubscriptions: (client: { id: string }) => Promise<void>
  delWill: (client: { id: string }) => Promise<unknown>
  cleanIncoming?: (client: { id: string }) => Promise<void>
}


const reviveBuffers = (_key: string, value: unknown): unknown =>
  (value !== null && typeof value === 'object' && (value as { type?: string }).type === 'Buffer' && Array.isArray((value as { data?: unknown }).data))
    ? Buffer.from((value as { data: number[] }).data)
    : value

export class SessionTimers {
  readonly #store: TextStore
  readonly #restored = new Map<string, NodeJS.Timeout>()
  /** the expiry interval (seconds) of each restored session timer still armed */
  readonly #restoredIntervals = new Map<string, number>()
  /** writes in flight, so a restart can wait for them */
  #pending: Promise<unknown> = Promise.resolve()

  /** In a cluster: whether this node may fire a timer (the Aedes patch asks before firing). */
  claim?: (kind: Kind, clientId: string) => Promise<boolean>

  /**
   * `wipeQueue` removes a session's queued messages from the store (what
   * Aedes' persistence has no call for). `ownership`: the timers are the
   * cluster's (see lib/cluster/timer-ownership.ts).
   */
  constructor (store: TextStore, private readonly wipeQueue: (clientId: string) => Promise<void>, private readonly logger: Logger, private readonly ownership?: TimerOwnership) {
    this.#store = store
    if (ownership !== undefined) this.claim = async (kind, clientId) => await ownership.claim(`${kind}:${clientId}`, clientId)
  }

  armed (kind: Kind, clientId: string, firesAt: number, will?: object): void {
    // armed the moment the timer starts: what is left is the whole interval
    const interval = Math.max(0, Math.round((firesAt - Date.now()) / 1000))
    const record: TimerRecord = { firesAt, interval, will: will === undefined ? undefined : { ...will }, owner: this.ownership?.node }
    this.#write(this.#store.put(`${kind}:${clientId}`, JSON.stringify(record)))
  }

  cleared (kind: Kind, clientId: string): void {
    this.#write(this.#store.del(`${kind}:${clientId}`))
  }

  /** Restores the stored timers against a freshly started engine. */
  async restore (engine: Aedes, persistence: SessionPersistence, onSessionWiped: (clientId: string) => void): Promise<void> {
    this.#engine = engine
    this.#persistence = persistence
    this.#onSessionWiped = onSessionWiped
    const ownership = this.ownership
    engine.on('client', (client: Client) => {
      for (const kind of ['session', 'will'] as const) this.#cancel(kind, client.id)
      ownership?.connected(client.id).catch((err: Error) => this.logger.warn({ err: err.message, clientId: client.id }, 'cluster client registry not updated'))
    })
    if (ownership !== undefined) {
      engine.on('clientDisconnect', (client: Client) => {
        ownership.disconnected(client.id).catch((err: Error) => this.logger.warn({ err: err.message, clientId: client.id }, 'cluster client registry not updated'))
      })
    }
    for await (const [key, value] of this.#store.entries()) {
      const record = JSON.parse(value, reviveBuffers) as TimerRecord
      // in a cluster, each node restores the timers it armed
      if (ownership !== undefined && record.owner !== ownership.node) continue
      await this.#rearm(key, record)
    }
  }

  /**
   * A node of the cluster left: its connected clients are registered nowhere
   * now, and its session-expiry timers are taken over here. (Its clients'
   * wills are published by Aedes' sweep of a dead broker's wills.)
   */
  async adoptFrom (node: string): Promise<void> {
    const ownership = this.ownership
    if (ownership === undefined) return
    for (const [key, value] of await ownership.forgetNode(node)) {
      if (!key.startsWith('session:') || !await ownership.adopt(key, value)) continue
      this.logger.info({ key, from: node }, 'session timer taken over from a node that left')
      await this.#rearm(key, { ...JSON.parse(value, reviveBuffers) as TimerRecord, owner: ownership.node })
    }
  }

  #engine: Aedes | undefined
  #persistence: SessionPersistence | undefined
  #onSessionWiped: (clientId: string) => void = () => {}

  async #rearm (key: string, record: TimerRecord): Promise<void> {
    const engine = this.#engine!
    const persistence = this.#persistence!
    const kind = key.slice(0, key.indexOf(':')) as Kind
    const clientId = key.slice(kind.length + 1)
    if (kind === 'will') {
      // the will now belongs to this timer, not to Aedes' sweep of dead brokers' wills
      await persistence.delWill({ id: clientId })
    }
    const fire = kind === 'session'
      ? async () => await this.#wipe(clientId, persistence, this.#onSessionWiped)
      : async () => await this.#publishWill(engine, record.will)
    if (kind === 'session' && typeof record.interval === 'number') this.#restoredIntervals.set(clientId, record.interval)
    const run = (): void => {
      this.#restored.delete(key)
      if (kind === 'session') this.#restoredIntervals.delete(clientId)
      const owned = this.claim === undefined ? Promise.resolve(true) : this.claim(kind, clientId)
      owned.then(async (mine) => {
        if (!mine) return
        await fire()
        if (this.claim === undefined) this.cleared(kind, clientId)
      }).catch((err: Error) => this.logger.error({ err, clientId, kind }, 'restored timer failed'))
    }
    // a record without a usable time is due now
    if (Number.isFinite(record.firesAt) && record.firesAt > Date.now()) this.#arm(key, record.firesAt, run)
    else run()
  }

  /** setTimeout fires at once past 2^31-1 ms (24.8 days): a later time is reached in steps. */
  #arm (key: string, firesAt: number, run: () => void): void {
    const wait = Math.min(firesAt - Date.now(), MAX_TIMER_MS)
    this.#restored.set(key, setTimeout(() => firesAt <= Date.now() ? run() : this.#arm(key, firesAt, run), wait).unref())
  }

  /** The expiry interval (seconds) of an offline session whose timer was restored from the store; undefined when none is. */
  restoredExpiryInterval (clientId: string): number | undefined {
    return this.#restoredIntervals.get(clientId)
  }

  /** Persistent sessions restored from the store at start, offline still: their expiry timer has neither fired nor been cancelled. */
  restoredSessions (): number {
    let count = 0
    for (const key of this.#restored.keys()) if (key.startsWith('session:')) count++
    return count
  }

  async stop (): Promise<void> {
    for (const timer of this.#restored.values()) clearTimeout(timer)
    this.#restored.clear()
    this.#restoredIntervals.clear()
    await this.#pending
  }

  #cancel (kind: Kind, clientId: string): void {
    const key = `${kind}:${clientId}`
    const timer = this.#restored.get(key)
    if (timer === undefined) return
    clearTimeout(timer)
    this.#restored.delete(key)
    if (kind === 'session') this.#restoredIntervals.delete(clientId)
    this.cleared(kind, clientId)
  }

  async #wipe (clientId: string, persistence: SessionPersistence, onSessionWiped: (clientId: string) => void): Promise<void> {
    const client = { id: clientId }
    await persistence.cleanSubscriptions(client)
    await persistence.delWill(client)
    await persistence.cleanIncoming?.(client)
    await this.wipeQueue(clientId)
    onSessionWiped(clientId)
    this.logger.info({ clientId }, 'session expired while the node was down')
  }

  /** Authorized as its owner (stored with it) now, when its client has left; a refused will is dropped. */
  async #publishWill (engine: Aedes, will: Record<string, unknown> | undefined): Promise<void> {
    if (will === undefined) return
    const packet = { ...will, cmd: 'publish', dup: false } as unknown as AedesPublishPacket
    const refused = await new Promise<Error | null>((resolve) => { engine.authorizePublish(null, packet, (err) => resolve(err ?? null)) })
    if (refused !== null) {
      this.logger.warn({ topic: packet.topic, reason: refused.message }, 'restored will not published')
      return
    }
    await new Promise<void>((resolve, reject) => {
      engine.publish(packet, (err?: Error | null) => err ? reject(err) : resolve())
    })
  }

  #write (operation: Promise<unknown>): void {
    const guarded = operation.catch((err: Error) => this.logger.error({ err }, 'cannot record a session timer'))
    this.#pending = Promise.all([this.#pending, guarded])
  }
}
