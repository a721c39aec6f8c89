// Many connections opened a bounded number at a time, and kept alive as a
// real client keeps them: shared by the bench's idle connections
// (bench/worker.ts) and the soak's clients (bench/soak-worker.ts).
import { RawClient } from './client.js'

/** Runs `work(0)` … `work(count - 1)` in that order, at most `lanes` at a time. */
export async function inLanes (count: number, lanes: number, work: (index: number) => Promise<void>): Promise<void> {
  let next = 0
  const lane = async (): Promise<void> => {
    while (next < count) await work(next++)
  }
  await Promise.all(Array.from({ length: Math.min(lanes, count) }, lane))
}

/** A PINGREQ from each raw client in `clients` (read at each round) every half keepalive, as a real client sends. */
export function pingEveryHalfKeepalive (clients: readonly unknown[], keepaliveS: number): void {
  if (keepaliveS <= 0) return
  setInterval(() => {
    for (const c of clients) if (c instanceof RawClient) c.send({ cmd: 'pingreq' })
  }, keepaliveS * 500).unref()
}
