// The open-file limit a run needs: every connection is a file descriptor in the
// server and in a client worker, and a shell's default soft limit (often 1024
// or 20 000) is below BENCH_CONNECTIONS=100000. The runner then starts itself
// again under util-linux's `prlimit --nofile`, which every child inherits.
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'

const RAISED = 'BENCH_NOFILE_RAISED'
/** File descriptors a server needs beside its connections */
export const FD_HEADROOM = 200

/** Soft RLIMIT_NOFILE of this process, which the servers and workers inherit. */
export function openFileLimit (): number {
  const match = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'))
  return match === null || match[1] === 'unlimited' ? Infinity : Number(match[1])
}

/**
 * When the limit is below `needed` and prlimit may raise it (root, or a hard
 * limit high enough), runs this script again under the raised limit and gives
 * its exit code; null when it runs here (enough already, or it cannot be raised).
 */
export function rerunWithOpenFiles (needed: number): number | null {
  if (openFileLimit() >= needed || process.env[RAISED] !== undefined) return null
  const limit = `--nofile=${needed}:${needed}`
  if (spawnSync('prlimit', [limit, 'true'], { stdio: 'ignore' }).status !== 0) return null
  process.stderr.write(`bench: open files limit ${openFileLimit()} < ${needed}: running again under prlimit ${limit}\n`)
  const run = spawnSync('prlimit', [limit, process.execPath, ...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit', env: { ...process.env, [RAISED]: '1' } })
  return run.status ?? 1
}
