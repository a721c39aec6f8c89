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

/** How finely the keepalive wheel spreads the PINGREQs over the half keepalive. */
const WHEEL_TICK_MS = 20

/**
 * A PINGREQ from each client added, every half keepalive from the time it was
 * added (its connect), as a real client's own timer sends it — so clients that
 * connected over some seconds ping over those seconds, not all in one tick.
 * One timer per wheel: a client sits in the bucket last pinged when it was
 * added, and each tick pings the clients of the buckets whose time came.
 */
export class KeepaliveWheel {
  private readonly buckets: RawClient[][]
  private readonly started = performance.now()
  private lastSlot = 0
  private timer: NodeJS.Timeout | null = null

  constructor (keepaliveS: number) {
    const slots = Math.max(1, Math.round(keepaliveS * 500 / WHEEL_TICK_MS))
    this.buckets = keepaliveS > 0 ? Array.from({ length: slots }, () => []) : []
    if (keepaliveS > 0) this.timer = setInterval(() => this.tick(), WHEEL_TICK_MS).unref()
  }

  add (client: RawClient): void {
    if (this.buckets.length === 0) return
    // the last bucket pinged: its next turn is a full half keepalive away
    this.buckets[this.lastSlot % this.buckets.length].push(client)
  }

  stop (): void {
    if (this.timer !== null) clearInterval(this.timer)
    this.timer = null
  }

  private slotNow (): number {
    return Math.floor((performance.now() - this.started) / WHEEL_TICK_MS)
  }

  /** Pings every bucket whose time came since the last tick (a late timer catches up, at most one round). */
  private tick (): void {
    const now = this.slotNow()
    const from = Math.max(this.lastSlot + 1, now - this.buckets.length + 1)
    for (let slot = from; slot <= now; slot++) {
      for (const c of this.buckets[slot % this.buckets.length]) c.send({ cmd: 'pingreq' })
    }
    this.lastSlot = now
  }
}
