// The longest event-loop stall of a node as a client sees it: one more MQTT
// connection that sends a PINGREQ every PROBE_MS (the next only after the
// PINGRESP) and keeps the longest round trip. The node answers a PINGREQ as
// soon as its event loop reads the socket, so the longest round trip is the
// longest time the node did not serve its sockets. Its RSS is sampled at the
// same pace.
import { RawClient } from './client.js'
import { rssKiB } from './servers.js'

const PROBE_MS = 20

export interface ProbeResult {
  /** the longest stall that began inside the measured window (all of the run when none was given) */
  longestStallMs: number
  /** the longest that began before it: the clients connecting and the load's first, cold second */
  longestWarmupStallMs: number
  maxRssMiB: number
}

export class LoopProbe {
  #longest = 0
  #longestWarmup = 0
  #maxRss = 0
  /** hrtime (ns) from which a stall counts as the measured window's; set by the runner when the load starts */
  window: { fromNs: bigint } = { fromNs: 0n }
  /** hrtime (ns) of the PINGREQ waiting for its PINGRESP */
  #sentAtNs = 0n
  #waiting = false
  #timer: NodeJS.Timeout | null = null

  private constructor (private readonly client: RawClient, private readonly pid: number) {}

  static async start (port: number, pid: number, clientId: string): Promise<LoopProbe> {
    let probe: LoopProbe | null = null
    const client = await RawClient.connect({ port, clientId, keepalive: 0, onPacket: (p) => { if (p.cmd === 'pingresp') probe?.answered() } })
    probe = new LoopProbe(client, pid)
    probe.#timer = setInterval(() => probe?.tick(), PROBE_MS)
    return probe
  }

  private tick (): void {
    try {
      this.#maxRss = Math.max(this.#maxRss, rssKiB(this.pid))
    } catch { /* the process is gone: the runner reports its death */ }
    if (this.#waiting) {
      this.#record()
      return
    }
    this.#waiting = true
    this.#sentAtNs = process.hrtime.bigint()
    this.client.send({ cmd: 'pingreq' })
  }

  private answered (): void {
    this.#waiting = false
    this.#record()
  }

  #record (): void {
    const stall = Number(process.hrtime.bigint() - this.#sentAtNs) / 1e6
    if (this.#sentAtNs >= this.window.fromNs) this.#longest = Math.max(this.#longest, stall)
    else this.#longestWarmup = Math.max(this.#longestWarmup, stall)
  }

  stop (): ProbeResult {
    if (this.#timer !== null) clearInterval(this.#timer)
    this.client.close()
    return { longestStallMs: this.#longest, longestWarmupStallMs: this.#longestWarmup, maxRssMiB: this.#maxRss / 1024 }
  }
}
