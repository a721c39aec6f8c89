// Preloaded into the soak's broker (`--import soak-probe.js`, BENCH_SOAK_FILE
// set): every BENCH_SOAK_PROBE_MS (default 5 s) it appends one JSON line to
// the file with the process' memory and the event-loop delay of that interval
// (perf_hooks' histogram at 10 ms resolution, reset each interval), so the
// runner can plot them without a plugin or an extra connection.
import { appendFileSync } from 'node:fs'
import { monitorEventLoopDelay } from 'node:perf_hooks'

const file = process.env.BENCH_SOAK_FILE
const everyMs = Number(process.env.BENCH_SOAK_PROBE_MS ?? 5000)
const RESOLUTION_MS = 10
const lateMs = (ns: number): number => Math.max(0, ns / 1e6 - RESOLUTION_MS)

if (file !== undefined) {
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS })
  histogram.enable()
  setInterval(() => {
    const memory = process.memoryUsage()
    const line = {
      t: Date.now(),
      rss: memory.rss,
      heapUsed: memory.heapUsed,
      external: memory.external,
      loopP99Ms: histogram.count === 0 ? 0 : lateMs(histogram.percentile(99)),
      loopMaxMs: histogram.count === 0 ? 0 : lateMs(histogram.max)
    }
    histogram.reset()
    appendFileSync(file, JSON.stringify(line) + '\n')
  }, everyMs).unref()
}
