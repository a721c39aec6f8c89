// One store write per SUBSCRIBE rather than one per filter. Aedes stores a
// persistent session's granted filters one at a time, each as its own store
// batch: 10 000 filters in one SUBSCRIBE were 10 000 LevelDB batches (or
// Redis round trips). The filters a client's SUBSCRIBE stores within one turn
// of the event loop are gathered here and written as one batch; each caller
// still resolves only once its filter is stored. A removal for that client
// (UNSUBSCRIBE, a clean session taking the id over) first waits for the
// pending batch, so the store sees the writes in the order they were made.
import type { AedesPersistence } from './store.js'

interface ClientRef { id: string }
interface SubscriptionWrites extends AedesPersistence {
  addSubscriptions: (client: ClientRef, subs: unknown[]) => Promise<void>
  removeSubscriptions: (client: ClientRef, topics: string[]) => Promise<void>
  cleanSubscriptions: (client: ClientRef) => Promise<void>
}

interface Batch { subs: unknown[], written: Promise<void> }

export function coalesceSubscriptionWrites (persistence: AedesPersistence): void {
  const p = persistence as SubscriptionWrites
  const add = p.addSubscriptions.bind(p)
  const remove = p.removeSubscriptions.bind(p)
  const clean = p.cleanSubscriptions.bind(p)
  const pending = new Map<string, Batch>()

  p.addSubscriptions = async (client, subs) => {
    let batch = pending.get(client.id)
    if (batch === undefined) {
      const gathered: unknown[] = []
      const written = new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
        pending.delete(client.id)
        await add(client, gathered)
      })
      batch = { subs: gathered, written }
      pending.set(client.id, batch)
    }
    for (const sub of subs) batch.subs.push(sub)
    await batch.written
  }
  const settled = async (client: ClientRef): Promise<void> => {
    await pending.get(client.id)?.written.catch(() => undefined)
  }
  p.removeSubscriptions = async (client, topics) => {
    await settled(client)
    await remove(client, topics)
  }
  p.cleanSubscriptions = async (client) => {
    await settled(client)
    await clean(client)
  }
}
