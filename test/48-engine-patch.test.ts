// The engine patch can be maintained: a node refuses an engine that lacks it
// (issue 15 #15). Aedes' own suite runs in test/49-aedes-upstream-*.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { assertEnginePatched, loadedEngineDir, missingEnginePatches } from '../lib/engine/patch-check.js'
import { INSTALL_ROOT } from '../lib/root.js'
import { tempDir } from './helpers/broker.js'
import { copyEngine } from './helpers/engine-copy.js'

const PATCHES = join(INSTALL_ROOT, 'patches')

async function patchMarkers (): Promise<string[]> {
  return (await readdir(PATCHES)).flatMap((file) => {
    const match = /^aedes\+[^+]+\+(\d+)\+(.+)\.patch$/.exec(file)
    return match === null ? [] : [`${match[1]}-${match[2]}`]
  }).sort()
}

interface Run { code: number | null, stdout: string, stderr: string }

async function run (command: string, args: string[], cwd: string): Promise<Run> {
  const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const [code] = await once(child, 'exit') as [number | null]
  return { code, stdout, stderr }
}

t.test('the installed engine carries every patch in patches/', async (t) => {
  const markers = await patchMarkers()
  t.ok(markers.length > 0, 'there are engine patches')
  t.same(missingEnginePatches(PATCHES, loadedEngineDir()), [])
  t.doesNotThrow(() => assertEnginePatched(INSTALL_ROOT))
})

t.test('an engine without the patches is refused, naming what is missing', async (t) => {
  const copy = await copyEngine({ withoutPatchMarkers: true, extra: ['bin', 'dist', 'etc', 'patches', 'package.json'] })
  t.teardown(copy.remove)
  t.same(missingEnginePatches(PATCHES, copy.engineDir), await patchMarkers())
  t.throws(() => assertEnginePatched(copy.root, copy.engineDir), /lacks the patches .*npx patch-package/)

  const dataDir = await tempDir()
  const result = await run(process.execPath, [join(copy.root, 'bin', 'broker'), '-d', dataDir, '-s', 'listener.tcp.external=127.0.0.1:0',
    '-s', 'listener.ssl.external=off', '-s', 'listener.ws.external=off', '-s', 'listener.wss.external=off'], copy.root)
  t.equal(result.code, 1, 'bin/broker exits 1')
  t.match(result.stderr, /broker: cannot start: the Aedes engine at .* lacks the patches 001-null-prototype-maps, 002-inbound-qos2-limit/)
})

