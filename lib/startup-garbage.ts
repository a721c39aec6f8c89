// One full garbage collection at the end of start-up, before the listeners
// open. Loading the modules, the config, the store and the plugins leaves tens
// of MB of garbage in the old generation; left alone, V8 collected it with a
// mark-compact of 10-60 ms about a second after the first clients arrived, a
// stall that every message in flight waited for (issue 20 #5: latency p99).
// Here it is paid while no client is connected.
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

export function collectStartupGarbage (): void {
  // `gc` is exposed only to contexts created after the flag is set: the node's own global stays as it was
  setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc') as (() => void) | undefined
  if (typeof gc === 'function') gc()
}
