// Runs part of Aedes' own test suite (shipped in the package) against the
// patched engine and compares the outcome with patches/aedes-upstream-tests.json.
// The suite is split across test files so each stays well inside tap's timeout.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFile, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import type { Test } from 'tap'
import { INSTALL_ROOT } from '../../lib/root.js'
import { copyEngine } from './engine-copy.js'

export const UPSTREAM_PARTS = 4

interface Expectations { changed: Record<string, string>, timing: Record<string, string> }

/** `not ok` top-level tests of one file's TAP output. */
function failedTests (tap: string): string[] {
  return [...tap.matchAll(/^not ok \d+ - (.*?)(?: # .*)?$/gm)].map((m) => m[1])
}

async function runFile (engineDir: string, file: string): Promise<{ failed: string[], passed: number }> {
  const child = spawn(process.execPath, ['--test', '--test-timeout=300000', '--test-reporter=tap', join('test', file)], { cwd: engineDir, stdio: ['ignore', 'pipe', 'ignore'] })
  let tap = ''
  child.stdout.on('data', (chunk: Buffer) => { tap += chunk.toString() })
  await once(child, 'exit')
  return { failed: failedTests(tap).map((name) => `${file} > ${name}`), passed: Number(/^# pass (\d+)/m.exec(tap)?.[1] ?? 0) }
}

/** Runs every UPSTREAM_PARTS-th upstream test file starting at `part`, one at a time. */
export async function checkUpstreamPart (t: Test, part: number): Promise<void> {
  const expected = JSON.parse(await readFile(join(INSTALL_ROOT, 'patches', 'aedes-upstream-tests.json'), 'utf8')) as Expectations
  const copy = await copyEngine()
  t.teardown(copy.remove)
  // drain-toxiproxy needs Docker (testcontainers); helper.js holds no tests
  const all = (await readdir(join(copy.engineDir, 'test'))).filter((f) => /\.c?js$/.test(f) && f !== 'helper.js' && f !== 'drain-toxiproxy.js').sort()
  t.ok(all.length >= 20, `${all.length} upstream test files in all`)
  const files = all.filter((_, i) => i % UPSTREAM_PARTS === part)
  const inPart = (name: string): boolean => files.includes(name.split(' > ')[0])

  const failed: string[] = []
  let passed = 0
  for (const file of files) {
    const result = await runFile(copy.engineDir, file)
    failed.push(...result.failed)
    passed += result.passed
  }
  t.ok(passed > 50, `${passed} upstream tests pass in ${files.join(', ')}`)
  t.same(failed.filter((name) => !(name in expected.timing)).sort(), Object.keys(expected.changed).filter(inPart).sort(),
    'exactly the upstream tests listed as changed by the patches fail')
}
