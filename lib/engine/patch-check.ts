// Refuses to run an engine that lacks the project's patches. Each numbered
// patch in patches/ (patch-package's sequence form) adds a marker file
// aedes/broker-patches/<NNN>-<name>; a missing marker means the install skipped
// its scripts (`npm ci --ignore-scripts`) or a patch failed to apply, and the
// node would run without its fixes (a client id `constructor` crashes it).
import { existsSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const ENGINE_PATCH = /^aedes\+[^+]+\+(\d+)\+(.+)\.patch$/

/** The markers of every engine patch in `patchesDir` that `engineDir` lacks. */
export function missingEnginePatches (patchesDir: string, engineDir: string): string[] {
  const missing: string[] = []
  for (const file of readdirSync(patchesDir).sort()) {
    const match = ENGINE_PATCH.exec(file)
    if (match === null) continue
    const marker = `${match[1]}-${match[2]}`
    if (!existsSync(join(engineDir, 'broker-patches', marker))) missing.push(marker)
  }
  return missing
}

/** The folder of the `aedes` package this process loads. */
export function loadedEngineDir (): string {
  return dirname(fileURLToPath(import.meta.resolve('aedes')))
}

export function assertEnginePatched (root: string, engineDir = loadedEngineDir()): void {
  const patchesDir = join(root, 'patches')
  if (!existsSync(patchesDir)) throw new Error(`no engine patches at ${patchesDir}: the install is incomplete`)
  const missing = missingEnginePatches(patchesDir, engineDir)
  if (missing.length > 0) {
    throw new Error(`the Aedes engine at ${engineDir} lacks the patches ${missing.join(', ')}; ` +
      'run `npx patch-package` in the install folder (an install with --ignore-scripts skips it)')
  }
}
