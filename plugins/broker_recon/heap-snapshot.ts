// `recon heapsnapshot <File>`: a V8 heap snapshot (Chrome DevTools' JSON
// format) written inside the node's data directory and nowhere else. The
// name is taken relative to the data directory (an absolute one must lie
// inside it) and gets `.heapsnapshot` when it lacks it, so no file the node
// reads (configs.override, loaded_plugins, plugin settings) can be made.
// Refused: a path that leaves the data directory (`..`, another absolute
// path), a folder on the way that is a symbolic link or missing, a file
// that exists (a symbolic link included: the file is created, never opened).
// The file is created 0600. Making the snapshot stops the event loop for as
// long as V8 takes to walk the heap (a second or more for a large heap).
import { constants } from 'node:fs'
import { lstat, open, realpath, unlink } from 'node:fs/promises'
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { getHeapSnapshot } from 'node:v8'

export const SUFFIX = '.heapsnapshot'

export class SnapshotRefused extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'SnapshotRefused'
  }
}

/** `child` lies strictly inside `parent` (both absolute, normalized). */
function inside (parent: string, child: string): boolean {
  const rel = relative(parent, child)
  return rel !== '' && !rel.startsWith('..' + sep) && rel !== '..' && !isAbsolute(rel)
}

/**
 * The absolute path the snapshot may be written to, checked: inside the data
 * directory, every folder from it to the file a real folder (no symbolic
 * link), the file not there yet.
 */
export async function snapshotPath (dataDir: string, requested: string): Promise<string> {
  if (requested.trim() === '' || requested.includes('\0')) throw new SnapshotRefused('name a file, e.g. before-upgrade.heapsnapshot')
  const named = requested.endsWith(SUFFIX) ? requested : requested + SUFFIX
  // the data directory as configured, or as the system resolves it (an absolute name may use either)
  const bases = [resolve(dataDir), await realpath(dataDir)]
  const base = bases.find((b) => inside(b, resolve(b, named)))
  if (base === undefined) throw new SnapshotRefused(`${requested}: a heap snapshot is written inside the data directory (${bases[0]}) only`)
  const file = resolve(base, named)
  for (let dir = dirname(file); dir !== base; dir = dirname(dir)) {
    let stat
    try {
      stat = await lstat(dir)
    } catch {
      throw new SnapshotRefused(`${relative(base, dir)}: no such folder in the data directory`)
    }
    if (stat.isSymbolicLink()) throw new SnapshotRefused(`${relative(base, dir)}: a symbolic link; a heap snapshot is written to a real folder of the data directory`)
    if (!stat.isDirectory()) throw new SnapshotRefused(`${relative(base, dir)}: not a folder`)
  }
  return file
}

export interface SnapshotFacts {
  file: string
  /** bytes */
  size: number
  /** ms it took, the snapshot and the writing */
  ms: number
}

/** Writes the snapshot to a new file (0600) at a checked path; a failure removes what was written. */
export async function writeHeapSnapshot (dataDir: string, requested: string): Promise<SnapshotFacts> {
  const file = await snapshotPath(dataDir, requested)
  const started = Date.now()
  let handle
  try {
    // O_EXCL: never an existing file; O_NOFOLLOW: never through a link put there meanwhile
    handle = await open(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'EEXIST' || code === 'ELOOP') throw new SnapshotRefused(`${relative(dataDir, file) || file}: exists already; name a new file`)
    throw err
  }
  try {
    await pipeline(getHeapSnapshot(), handle.createWriteStream())
  } catch (err) {
    await handle.close().catch(() => {})
    await unlink(file).catch(() => {})
    throw err
  }
  const { size } = await lstat(file)
  return { file, size, ms: Date.now() - started }
}

