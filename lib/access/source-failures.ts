// Recent failed logins per source address, for the management API's
// `management.login_rate` and MQTT's `mqtt.auth_failure_delay`: the times of
// the failures of the last `windowMs`, per address. At most MAX_SOURCES
// addresses are remembered (the longest quiet goes first), so a flood from
// many addresses cannot grow it without bound.
const MAX_SOURCES = 10_000

export class SourceFailures {
  /** address → times of its recent failures, oldest first; insertion order = least recently failed first */
  readonly #bySource = new Map<string, number[]>()

  constructor (readonly windowMs: number, private readonly now: () => number = Date.now) {}

  /** The source's failures within the window. */
  recent (source: string): number[] {
    const times = this.#bySource.get(source)
    if (times === undefined) return []
    const since = this.now() - this.windowMs
    while (times.length > 0 && times[0] <= since) times.shift()
    if (times.length === 0) this.#bySource.delete(source)
    return times
  }

  /** One more failure; `keep` bounds how many times are kept per source. */
  add (source: string, keep: number): void {
    const times = this.recent(source)
    this.#bySource.delete(source)
    times.push(this.now())
    if (times.length > keep) times.splice(0, times.length - keep)
    this.#bySource.set(source, times)
    if (this.#bySource.size > MAX_SOURCES) this.#bySource.delete(this.#bySource.keys().next().value as string)
  }

  /** Takes back the latest failure (an attempt counted before its check, which then succeeded). */
  removeLatest (source: string): void {
    const times = this.#bySource.get(source)
    times?.pop()
    if (times?.length === 0) this.#bySource.delete(source)
  }
}
