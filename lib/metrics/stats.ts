// Statistics of one node (SPEC §2.12): each a current value and its
// high-water mark (`…/max`), which stays after the value drops. Values are
// set whenever what they count changes (connect, disconnect, subscribe,
// unsubscribe, a retained message stored or cleared, a session expiring), so
// the mark sees every peak, not only the ones a reader happened to sample.

export const STAT_NAMES = [
  'connections', 'sessions', 'sessions/persistent', 'subscriptions', 'subscriptions/shared',
  'subscribers', 'topics', 'retained', 'routes'
] as const

export type StatName = typeof STAT_NAMES[number]
type StatKey = `${StatName}/count` | `${StatName}/max`
export type V3Stats = Record<StatKey, number>

/** v2 keys (SPEC §2.12): `clients/*` from connections; no persistent or shared sessions. */
const V2_NAMES: Array<[string, StatName]> = [
  ['clients', 'connections'], ['retained', 'retained'], ['routes', 'routes'], ['sessions', 'sessions'],
  ['subscribers', 'subscribers'], ['subscriptions', 'subscriptions'], ['topics', 'topics']
]

function zeros (): Record<StatName, number> {
  return Object.fromEntries(STAT_NAMES.map((name) => [name, 0])) as Record<StatName, number>
}

export class Stats {
  readonly count = zeros()
  readonly max = zeros()

  set (name: StatName, value: number): void {
    this.count[name] = value
    if (value > this.max[name]) this.max[name] = value
  }

  toV3 (): V3Stats {
    const out: Record<string, number> = {}
    for (const name of STAT_NAMES) {
      out[`${name}/count`] = this.count[name]
      out[`${name}/max`] = this.max[name]
    }
    return out as V3Stats
  }

  toV2 (): Record<string, number> {
    const out: Record<string, number> = {}
    for (const [key, name] of V2_NAMES) {
      out[`${key}/count`] = this.count[name]
      out[`${key}/max`] = this.max[name]
    }
    return out
  }
}
