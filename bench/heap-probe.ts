// Preloaded into a measured Node server (`--expose-gc --import heap-probe.js`,
// BENCH_PROBE_DIR set) by the memory section: on its n-th SIGUSR2 (from 0) it
// collects garbage, reads process.memoryUsage(), then writes a heap snapshot if
// the runner created `<dir>/snapshot-<n>` (writing one grows the process'
// malloc arena, so RSS is read before), and last writes `<dir>/probe-<n>.json`,
// which the runner waits for.
import { existsSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import v8 from 'node:v8'

const dir = process.env.BENCH_PROBE_DIR
let seq = 0
if (dir !== undefined) {
  process.on('SIGUSR2', () => {
    const n = seq++
    const collect = (globalThis as { gc?: () => void }).gc
    collect?.()
    collect?.()
    const memory = process.memoryUsage()
    const wanted = existsSync(join(dir, `snapshot-${n}`))
    const snapshot = wanted ? v8.writeHeapSnapshot(join(dir, `probe-${n}.heapsnapshot`)) : null
    const file = join(dir, `probe-${n}.json`)
    writeFileSync(`${file}.tmp`, JSON.stringify({ memory, snapshot }))
    renameSync(`${file}.tmp`, file)
  })
}
