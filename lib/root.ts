// The install root (the folder holding package.json, etc/ and data/), found
// from this file so it is the same whether the code runs from lib/ or dist/lib/.
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

function findRoot (from: string): string {
  let dir = from
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir)
    if (parent === dir) throw new Error(`no package.json above ${from}`)
    dir = parent
  }
  return dir
}

export const INSTALL_ROOT = findRoot(dirname(fileURLToPath(import.meta.url)))
