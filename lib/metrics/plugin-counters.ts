// Counters plugins add to the node's metrics (`ctx.metrics.counter`, e.g.
// broker_delayed_publish's `messages/delayed`): listed after the SPEC §2.11
// keys in the metrics API and exposed to Prometheus while their plugin is
// loaded. A key belongs to one plugin at a time.
import type { PluginCounter } from '../plugin-kit/contract.js'

const KEY = /^[a-z0-9_][a-z0-9_/.]*$/

interface Entry { owner: string, help: string, value: number }

export class PluginCounters {
  readonly #entries = new Map<string, Entry>()

  /** A counter `owner` holds until the returned release runs; throws for a bad key or one held already. */
  claim (owner: string, key: string, help: string, reserved: ReadonlySet<string>): { counter: PluginCounter, release: () => void } {
    if (!KEY.test(key)) throw new Error(`metric key ${JSON.stringify(key)}: only a-z, 0-9, _ / . allowed`)
    const held = this.#entries.get(key)
    if (reserved.has(key) || held !== undefined) throw new Error(`metric ${key} is ${held === undefined ? 'a node metric' : `counted by ${held.owner}`}`)
    const entry: Entry = { owner, help, value: 0 }
    this.#entries.set(key, entry)
    return {
      counter: {
        inc: (by = 1) => { if (Number.isFinite(by) && by > 0) entry.value += by },
        value: () => entry.value
      },
      release: () => { if (this.#entries.get(key) === entry) this.#entries.delete(key) }
    }
  }

  /** key → value, in the order they were claimed */
  values (): Record<string, number> {
    const values: Record<string, number> = {}
    for (const [key, { value }] of this.#entries) values[key] = value
    return values
  }

  /** key → help, for the exposition */
  helps (): Map<string, string> {
    return new Map([...this.#entries].map(([key, { help }]) => [key, help]))
  }
}
