// What "a plugin's files changed" means here: the files the node imports the
// plugin from (its folder under dist/plugins/ once built, or its sources when
// the node runs from TypeScript), each by name, size, inode and modification
// time. A folder's signature is those lines, sorted; a different signature
// is a change. Tests (test/), node_modules and hidden folders are left out:
// they are not the plugin's running code.
import { readdir, stat } from 'node:fs/promises'
import { join, relative } from 'node:path'

/** Module files the node may import: JS (built), TypeScript (sources), JSON. */
const CODE_FILE = /\.(?:[mc]?js|json|[mc]?ts)$/
const DECLARATION = /\.d\.[mc]?ts$/
const SKIPPED_FOLDERS = Object.freeze(['test', 'node_modules'])

/** At most this many files are looked at per plugin, so a runaway folder cannot stall the check. */
export const MAX_FILES = 5000

/** The folder's signature; undefined when it cannot be read (gone, no access). */
export async function folderSignature (folder: string): Promise<string | undefined> {
  const lines: string[] = []
  try {
    await walk(folder, folder, lines)
  } catch {
    return undefined
  }
  return lines.sort().join('\n')
}

async function walk (root: string, folder: string, lines: string[]): Promise<void> {
  for (const entry of await readdir(folder, { withFileTypes: true })) {
    if (lines.length >= MAX_FILES) return
    const path = join(folder, entry.name)
    if (entry.isDirectory()) {
      if (!entry.name.startsWith('.') && !SKIPPED_FOLDERS.includes(entry.name)) await walk(root, path, lines)
    } else if (entry.isFile() && CODE_FILE.test(entry.name) && !DECLARATION.test(entry.name)) {
      const info = await stat(path).catch(() => undefined)
      if (info !== undefined) lines.push(`${relative(root, path)} ${info.size} ${info.ino} ${info.mtimeMs}`)
    }
  }
}
