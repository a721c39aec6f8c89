// Which client ids have anything in the store, kept in memory so the store is
// not searched for clients that have nothing there. Every clean connect asks
// the persistence to clean subscriptions, the old will and inbound QoS 2
// state (and every clean disconnect the QoS 2 state again): without this
// index each of those is a LevelDB scan or lookup, which dominated the
// connect path. Seeded from the keys on disk at start; kept by wrapping the
// persistence's writes.
import type { Level } from 'level'
import type { AedesPersistence } from './store.js'

interface ClientRef { id: string }
interface IndexedPersistence extends AedesPersistence {
  addSubscriptions: (client: ClientRef, subs: unknown[]) => Promise<void>
  cleanSubscriptions: (client: ClientRef) => Promise<void>
  putWill: (client: ClientRef, packet: unknown) => Promise<void>
  delWill: (client: ClientRef) => Promise<unknown>
  incomingStorePacket: (client: ClientRef, packet: unknown) => Promise<void>
  cleanIncoming: (client: ClientRef) => Promise<void>
}

/** key prefix → the set of decoded client ids found under it */
const PREFIXES = { subscriptions: 'subscriptions:', will: 'will:', incoming: 'incoming:' } as const

/** What the index tells the rest of the node. */
export interface StoreIndex {
  /** client ids that have subscriptions in the store (persistent sessions, online or not) */
  clientsWithSubscriptions: () => Promise<string[]>
}

/** A store that says itself which clients it holds (Redis in a cluster, shared by every node): nothing to track here. */
export function storedClientsIndex (storedClients: () => Promise<string[]>): StoreIndex {
  return { clientsWithSubscriptions: storedClients }
}

export async function indexStore (db: Level<string, Buffer>, persistence: AedesPersistence): Promise<StoreIndex> {
  const withSubscriptions = await idsUnder(db, PREFIXES.subscriptions, true)
  const withWill = await idsUnder(db, PREFIXES.will, false)
  const withIncoming = await idsUnder(db, PREFIXES.incoming, true)
  const p = persistence as IndexedPersistence
  track(p, withSubscriptions, 'addSubscriptions', 'cleanSubscriptions')
  track(p, withWill, 'putWill', 'delWill')
  track(p, withIncoming, 'incomingStorePacket', 'cleanIncoming')
  return { clientsWithSubscriptions: async () => [...withSubscriptions] }
}

type Adder = 'addSubscriptions' | 'putWill' | 'incomingStorePacket'
type Cleaner = 'cleanSubscriptions' | 'delWill' | 'cleanIncoming'

/** `add` records the client in `ids`; `clean` goes to the store only for a recorded client. */
function track (p: IndexedPersistence, ids: Set<string>, add: Adder, clean: Cleaner): void {
  const adder = p[add].bind(p) as (client: ClientRef, arg: unknown) => Promise<void>
  const cleaner = p[clean].bind(p) as (client: ClientRef) => Promise<unknown>
  ;(p as unknown as Record<Adder, typeof adder>)[add] = async (client, arg) => {
    ids.add(client.id)
    await adder(client, arg)
  }
  ;(p as unknown as Record<Cleaner, typeof cleaner>)[clean] = async (client) => {
    if (!ids.has(client.id)) return undefined
    const result = await cleaner(client)
    ids.delete(client.id)
    return result
  }
}

/** Client ids (decoded) of the keys under `prefix`; with `delimited`, the id ends at the next ':'. */
async function idsUnder (db: Level<string, Buffer>, prefix: string, delimited: boolean): Promise<Set<string>> {
  const ids = new Set<string>()
  const end = prefix.slice(0, -1) + ';'
  for await (const key of db.keys({ gte: prefix, lt: end })) {
    const rest = key.slice(prefix.length)
    ids.add(decodeURIComponent(delimited ? rest.slice(0, rest.indexOf(':')) : rest))
  }
  return ids
}
