// A file a plugin setting names (a PEM certificate or key …), relative to
// the install root; read at load, so a missing one fails the load naming
// the setting and the path.
import { readFile } from 'node:fs/promises'
import { resolve } from 'node:path'

export async function readSettingFile (root: string, key: string, value: string): Promise<Buffer> {
  const path = resolve(root, value)
  try {
    return await readFile(path)
  } catch (err) {
    throw new Error(`${key}: cannot read ${path}: ${(err as Error).message}`, { cause: err })
  }
}
