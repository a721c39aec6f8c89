// A copy of the installed Aedes engine in a temporary install folder whose
// other packages are links to the real ones: for running Aedes' own test
// suite against the patched engine, and for starting a node on an engine
// whose patches are missing.
import { cp, mkdir, readdir, rm, symlink } from 'node:fs/promises'
import { join } from 'node:path'
import { INSTALL_ROOT } from '../../lib/root.js'
import { tempDir } from './broker.js'

export interface EngineCopy {
  /** the temporary install folder */
  root: string
  /** its node_modules/aedes */
  engineDir: string
  remove: () => Promise<void>
}

export async function copyEngine ({ withoutPatchMarkers = false, extra = [] as string[] } = {}): Promise<EngineCopy> {
  const root = await tempDir('broker-engine-')
  const modules = join(root, 'node_modules')
  await mkdir(modules)
  for (const entry of await readdir(join(INSTALL_ROOT, 'node_modules'))) {
    if (entry === 'aedes' || entry.startsWith('.')) continue
    await symlink(join(INSTALL_ROOT, 'node_modules', entry), join(modules, entry))
  }
  const engineDir = join(modules, 'aedes')
  await cp(join(INSTALL_ROOT, 'node_modules', 'aedes'), engineDir, { recursive: true })
  if (withoutPatchMarkers) await rm(join(engineDir, 'broker-patches'), { recursive: true, force: true })
  for (const path of extra) await cp(join(INSTALL_ROOT, path), join(root, path), { recursive: true })
  return { root, engineDir, remove: async () => await rm(root, { recursive: true, force: true }) }
}
