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
  outgoingEnqueueCombi: (subs: Sub[], packet: object) => Promise<unknown>
  outgoingClearMessageId: (client: { id: string }, packet: object) => Promise<unknown>
}

export class SessionQueues {
  readonly #lengths = new Map<string, number>()

  constructor (
    private readonly config: Config,
    private readonly isOnline: (clientId: string) => boolean,
    private readonly onDrop: (clientId: string, packet: object) => void
  ) {}

  length (clientId: string): number {
    return this.#lengths.get(clientId) ?? 0
  }

  /** Counts what the store holds, then wraps the persistence's queue operations. */
  async attach (db: Level<string, Buffer>, persistence: AedesPersistence): Promise<void> {
    for await (const key of db.keys({ gte: OUTGOING_PREFIX, lt: 'outgoing;' })) {
      const clientId = decodeURIComponent(key.slice(OUTGOING_PREFIX.length, key.indexOf(':', OUTGOING_PREFIX.length)))
      this.#add(clientId, 1)
    }
    const queue = persistence as QueuePersistence
    const enqueue = queue.outgoingEnqueueCombi.bind(queue)
    const clear = queue.outgoingClearMessageId.bind(queue)
    queue.outgoingEnqueueCombi = async (subs, packet) => await enqueue(this.#admit(subs, packet), packet)
    queue.outgoingClearMessageId = async (client, packet) => {
      const cleared = await clear(client, packet)
      if (cleared !== undefined) this.#add(client.id, -1)
      return cleared
    }
  }

  #admit (subs: Sub[], packet: object): Sub[] {
    const max = this.config.get('zone.external.max_mqueue_len')
    const limit = max === 0 ? Infinity : max + this.config.get('zone.external.max_inflight')
    const admitted: Sub[] = []
    for (const sub of subs) {
      if (this.length(sub.clientId) >= limit && !this.isOnline(sub.clientId)) {
        this.onDrop(sub.clientId, packet)
        continue
      }
      this.#add(sub.clientId, 1)
      admitted.push(sub)
    }
    return admitted
  }

  #add (clientId: string, delta: number): void {
    const length = this.length(clientId) + delta
    if (length > 0) this.#lengths.set(clientId, length)
    else this.#lengths.delete(clientId)
  }
}
