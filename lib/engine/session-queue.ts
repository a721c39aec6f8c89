// `zone.external.max_mqueue_len` for persistent sessions: Aedes queues QoS 1/2
// messages for a persistent subscriber in the store. This caps each offline
// session's stored messages at max_mqueue_len + max_inflight (EMQ X counts
// the in-flight window apart from the queue); a message beyond it is dropped
// for that session only, newest first (as Mosquitto's max_queued_messages).
// Online sessions are never cut here: their outbound window holds the excess.
import type { Level } from 'level'
import type { Config } from '../config/store.js'
import type { AedesPersistence } from './store.js'

const OUTGOING_PREFIX = 'outgoing:'

interface Sub { clientId: string }
interface QueuePersistence extends AedesPersistence {
  /** also called once per subscriber by outgoingEnqueueCombi */
  outgoingEnqueue: (sub: Sub, packet: object) => Promise<unknown>
  outgoingClearMessageId: (client: { id: string }, packet: object) => Promise<unknown>
  outgoingStream: (client: { id: string }) => NodeJS.ReadableStream
  /** asked by the engine (patch) before it reads the queue on connect: true skips the read */
  outgoingEmpty?: (client: { id: string }) => boolean
}

export class SessionQueues {
  readonly #lengths = new Map<string, number>()
  /** a message was stored for an offline session (its `enqueue_msg`) */
  onQueuedOffline: ((clientId: string) => void) | undefined

  constructor (
    private readonly config: Config,
    private readonly isOnline: (clientId: string) => boolean,
    private readonly onDrop: (clientId: string, packet: object) => void
  ) {}

  length (clientId: string): number {
    return this.#lengths.get(clientId) ?? 0
  }

  /** A session's queue was wiped outside Aedes (expired while the node was down). */
  forget (clientId: string): void {
    this.#lengths.delete(clientId)
  }

  /**
   * Counts what the store holds, then wraps the persistence's queue operations.
   * `exact: false` (a store other nodes write too): the counts are this node's
   * own enqueues, so the cap is per node and an empty count proves nothing.
   */
  async attach (db: Level<string, Buffer>, persistence: AedesPersistence, { exact = true } = {}): Promise<void> {
    for await (const key of exact ? db.keys({ gte: OUTGOING_PREFIX, lt: 'outgoing;' }) : []) {
      const clientId = decodeURIComponent(key.slice(OUTGOING_PREFIX.length, key.indexOf(':', OUTGOING_PREFIX.length)))
      this.#add(clientId, 1)
    }
    const queue = persistence as QueuePersistence
    const enqueue = queue.outgoingEnqueue.bind(queue)
    const clear = queue.outgoingClearMessageId.bind(queue)
    queue.outgoingEnqueue = async (sub, packet) => {
      if (this.#admit(sub, packet)) await enqueue(sub, packet)
    }
    // every connect reads the session's queue: the engine (patch) asks first and skips the read when nothing is queued
    if (exact) queue.outgoingEmpty = (client) => this.length(client.id) === 0
    queue.outgoingClearMessageId = async (client, packet) => {
      const cleared = await clear(client, packet)
      if (cleared !== undefined) this.#add(client.id, -1)
      return cleared
    }
  }

  #admit (sub: Sub, packet: object): boolean {
    const max = this.config.get('zone.external.max_mqueue_len')
    const limit = max === 0 ? Infinity : max + this.config.get('zone.external.max_inflight')
    const online = this.isOnline(sub.clientId)
    if (this.length(sub.clientId) >= limit && !online) {
      this.onDrop(sub.clientId, packet)
      return false
    }
    this.#add(sub.clientId, 1)
    if (!online) this.onQueuedOffline?.(sub.clientId)
    return true
  }

  #add (clientId: string, delta: number): void {
    const length = this.length(clientId) + delta
    if (length > 0) this.#lengths.set(clientId, length)
    else this.#lengths.delete(clientId)
  }
}
