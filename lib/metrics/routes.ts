// The node's subscriptions as statistics see them (SPEC §2.12): every
// session's topic filters — connected sessions and persistent sessions kept
// offline alike, as EMQ X keeps an offline session subscribed — and, from
// them, the distinct filters (the route table of one node). Kept up to date
// from the engine's subscribe/unsubscribe/connect/disconnect events, so
// reading it costs nothing. SUBSCRIBE is not the per-message path; these
// updates are cheap Set/Map operations per filter.
import { parseShared } from '../engine/shared-subscriptions.js'

/** `$share/<group>/<filter>` and `$queue/<filter>` (EMQ X) are shared subscriptions. */
export function isShared (filter: string): boolean {
  return parseShared(filter) !== undefined
}

/** The route a subscription makes: a shared one routes its inner filter. */
function routeOf (filter: string): string {
  return parseShared(filter)?.filter ?? filter
}

export class RouteTable {
  /** client id → its session's filters */
  readonly #sessions = new Map<string, Set<string>>()
  /** route (a filter; a shared subscription's inner filter) → how many subscriptions make it */
  readonly #filters = new Map<string, number>()
  subscriptions = 0
  shared = 0
  /** sessions holding at least one subscription */
  subscribers = 0

  /** Distinct filters routed to this node (= routes on one node; EMQ X's topics and routes). */
  get topics (): number {
    return this.#filters.size
  }

  add (clientId: string, filter: string): void {
    let filters = this.#sessions.get(clientId)
    if (filters === undefined) {
      filters = new Set()
      this.#sessions.set(clientId, filters)
    }
    if (filters.has(filter)) return
    if (filters.size === 0) this.subscribers++
    filters.add(filter)
    this.subscriptions++
    if (isShared(filter)) this.shared++
    const route = routeOf(filter)
    this.#filters.set(route, (this.#filters.get(route) ?? 0) + 1)
  }

  remove (clientId: string, filter: string): void {
    const filters = this.#sessions.get(clientId)
    if (filters === undefined || !filters.delete(filter)) return
    this.subscriptions--
    if (isShared(filter)) this.shared--
    const route = routeOf(filter)
    const holders = this.#filters.get(route)! - 1
    if (holders === 0) this.#filters.delete(route)
    else this.#filters.set(route, holders)
    if (filters.size === 0) {
      this.subscribers--
      this.#sessions.delete(clientId)
    }
  }

  /** The session ended: its subscriptions go. */
  drop (clientId: string): void {
    const filters = this.#sessions.get(clientId)
    if (filters === undefined) return
    for (const filter of [...filters]) this.remove(clientId, filter)
  }

  /** Makes a session's filters exactly `filters` (a session resumed, or started afresh). */
  sync (clientId: string, filters: Iterable<string>): void {
    this.drop(clientId)
    for (const filter of filters) this.add(clientId, filter)
  }

  /** The filters one session holds. */
  filtersOf (clientId: string): string[] {
    return [...this.#sessions.get(clientId) ?? []]
  }
}
