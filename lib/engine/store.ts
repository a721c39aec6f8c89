// The embedded durable store: LevelDB under <data_dir>/store, through
// aedes-persistence-level. LevelDB appends every write to its log before the
// write resolves, so anything acknowledged survives a process kill (not an OS
// crash: writes are not fsync'ed, as in EMQ X's default Mnesia disc_copies).
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { createRequire } from 'node:module'
import { Level } from 'level'
import { scanRetainedOnce } from './retained-scan.js'

const require = createRequire(import.meta.url)
// the package's main export wraps this class in a callback API; Aedes 2 wants the async one
const AsyncLevelPersistence = require('aedes-persistence-level/asyncPersistence.js') as new (db: Level<string, Buffer>) => AedesPersistence

/** The async persistence contract Aedes 2 calls (only the members the node itself uses are typed). */
export interface AedesPersistence {
  setup: (broker: unknown) => Promise<void>
  storeRetained: (packet: RetainedPacket) => Promise<void>
  createRetainedStream: (pattern: string) => NodeJS.ReadableStream
  subscriptionsByClient: (client: { id: string }) => Promise<unknown[]>
  destroy: () => Promise<void>
}

export interface RetainedPacket {
  topic: string
  payload: Buffer
  messageExpiry?: number
  [field: string]: unknown
}

export async function openStore (dataDir: string): Promise<{ db: Level<string, Buffer>, persistence: AedesPersistence }> {
  const path = join(dataDir, 'store')
  await mkdir(path, { recursive: true })
  const db = new Level<string, Buffer>(path)
  try {
    await db.open()
  } catch (err) {
    const cause = (err as { cause?: Error }).cause
    throw new Error(`cannot open the store at ${path}: ${cause?.message ?? (err as Error).message}`, { cause: err })
  }
  const persistence = new AsyncLevelPersistence(db)
  scanRetainedOnce(persistence)
  return { db, persistence }
}

/** A key → string section of the node's store (banned entries, timers, plugin stores). */
export function textSublevel (db: Level<string, Buffer>, name: string) {
  return db.sublevel<string, string>(name, { valueEncoding: 'utf8' })
}
export type TextSublevel = ReturnType<typeof textSublevel>

/** Removes a session's queued messages (the level persistence's `outgoing:` and `outgoing-id:` keys). */
export async function wipeLevelQueue (db: Level<string, Buffer>, clientId: string): Promise<void> {
  const id = encodeURIComponent(clientId)
  await db.clear({ gte: `outgoing:${id}:`, lt: `outgoing:${id};` })
  await db.clear({ gte: `outgoing-id:${id}:`, lt: `outgoing-id:${id};` })
}
