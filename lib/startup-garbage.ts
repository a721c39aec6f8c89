// One full garbage collection at the end of start-up, before the listeners
// open. Loading the modules, the config, the store and the plugins leaves tens
// of MB of garbage in the old generation; left alone, V8 collected it with a
// mark-compact of 10-60 ms about a second after the first clients arrived, a
// stall that every message in flight waited for (issue 20 #5: latency p99).
// Here it is paid while no client is connected.
import { setFlagsFromString } from 'node:v8'

export function collectStartupGarbage (): void {
  // V8's own collect call, compiled in this context while natives syntax is allowed: `--expose-gc`
  // would need a new context for its `gc`, which broker_recon would count as a second native context
  setFlagsFromString('--allow-natives-syntax')
  let collect: () => void
  try {
    collect = new Function('%CollectGarbage(null)') as () => void
  } finally {
    setFlagsFromString('--no-allow-natives-syntax')
  }
  collect()
}
