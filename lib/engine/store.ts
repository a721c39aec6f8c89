// The embedded durable store: LevelDB under <data_dir>/store, through
// aedes-persistence-level. LevelDB appends every write to its log before the
// write resolves, so anything acknowledged survives a process kill (not an OS
// crash: writes are not fsync'ed, as in EMQ X's default Mnesia disc_copies).
import { chmod, mkdir, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { createRequire } from 'node:module'
import { Level } from 'level'

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

/**
 * The data directory is the node's user's only (folders 0700, files 0600): it holds sessions,
 * messages, credentials. Made so, and what an older install left readable is made so at start.
 */
async function makePrivate (dataDir: string, path: string): Promise<void> {
  await mkdir(path, { recursive: true, mode: 0o700 })
  await chmod(dataDir, 0o700)
  for (const entry of await readdir(dataDir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) await chmod(join(entry.parentPath, entry.name), 0o600)
    else if (entry.isDirectory()) await chmod(join(entry.parentPath, entry.name), 0o700)
  }
}

export async function openStore (dataDir: string): Promise<{ db: Level<string, Buffer>, persistence: AedesPersistence }> {
  const path = join(dataDir, 'store')
  await makePrivate(dataDir, path)
  const db = new Level<string, Buffer>(path)
  // LevelDB creates its files with the process umask: none for group and others while it opens
  // (bin/broker sets that umask for the whole process; a node embedded elsewhere gets it here)
  const umask = process.umask(0o077)
  try {
    await db.open()
  } catch (err) {
    const cause = (err as { cause?: Error }).cause
    throw new Error(`cannot open the store at ${path}: ${cause?.message ?? (err as Error).message}`, { cause: err })
  } finally {
    process.umask(umask)
  }
  return { db, persistence: new AsyncLevelPersistence(db) }
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
