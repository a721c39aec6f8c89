#!/usr/bin/env node
// `npm start`'s build step: runs `npm run build` only when an input of the
// build is newer than the last successful build, whose end `npm run build`'s
// postbuild marks with dist/.build-stamp (`node scripts/build-if-stale.mjs
// --stamp`). The inputs are the folders tsconfig.build.json includes (every
// file in them, a front-end's ui/ sources under plugins/ too, and the
// folders themselves, so a removed file counts), package.json,
// package-lock.json and the tsconfig files. `--check` only tells (exit 1:
// a build is due). Plain Node, no dependency: it
// runs in an install pruned of the dev dependencies, where nothing is stale.
import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const stamp = join(root, 'dist', '.build-stamp')
const SKIP = new Set(['node_modules', 'dist', '.git'])

if (process.argv.includes('--stamp')) {
  writeFileSync(stamp, `${new Date().toISOString()}\n`)
  process.exit(0)
}

/** The newest modification time under `path` (a file, or a folder and all it holds), 0 when it does not exist. */
function newest (path) {
  let stat
  try {
    stat = statSync(path)
  } catch {
    return 0
  }
  let latest = stat.mtimeMs
  if (stat.isDirectory()) {
    for (const entry of readdirSync(path)) {
      if (!SKIP.has(entry)) latest = Math.max(latest, newest(join(path, entry)))
    }
  }
  return latest
}

function buildInputs () {
  const { include = [] } = JSON.parse(readFileSync(join(root, 'tsconfig.build.json'), 'utf8'))
  // `lib/**/*.ts` → lib: the folder before the first wildcard
  const folders = include.map((pattern) => pattern.split('/').filter((part, i, parts) => !/[*?{]/.test(part) && parts.slice(0, i).every((p) => !/[*?{]/.test(p))).join('/'))
  return [...new Set(folders), 'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'scripts/build-dashboard.mjs'].map((path) => join(root, path))
}

let built
try {
  built = statSync(stamp).mtimeMs
} catch {
  built = 0 // never built
}
const stale = buildInputs().find((input) => newest(input) > built)
if (stale === undefined) process.exit(0)
process.stderr.write(built === 0 ? 'npm start: no build yet: npm run build\n' : `npm start: ${stale} changed since the last build: npm run build\n`)
// --check: only says whether a build is due (exit 1) or not (exit 0)
if (process.argv.includes('--check')) process.exit(1)
const run = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' })
process.exit(run.status ?? 1)
