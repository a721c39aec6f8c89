// data/loaded_plugins (SPEC §5.2.4): the plugins loaded at boot, in chain
// order, one `name.` per line (EMQ X 3.1 form). Rewritten atomically.
import { readFile, rename, writeFile } from 'node:fs/promises'

export async function readLoadedList (file: string): Promise<string[] | undefined> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
  const names: string[] = []
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/%.*$/, '').trim()
    if (line === '') continue
    const name = line.endsWith('.') ? line.slice(0, -1).trim() : line
    if (!names.includes(name)) names.push(name)
  }
  return names
}

let writes = 0

export async function writeLoadedList (file: string, names: readonly string[]): Promise<void> {
  const tmp = `${file}.${process.pid}.${++writes}.tmp`
  await writeFile(tmp, names.map((name) => `${name}.\n`).join(''))
  await rename(tmp, file)
}
