// Banned clients (SPEC §2.16): entries by client id, user name or IP address,
// each until a time (unix seconds). Kept durably in the node's store, checked
// at connect, swept when they expire.
import type { TextStore } from '../engine/text-store.js'

export const BANNED_KINDS = ['client_id', 'username', 'ip_address'] as const
export type BannedKind = typeof BANNED_KINDS[number]

export interface BannedEntry {
  who: string
  as: BannedKind
  reason: string
  desc: string
  by: string
  /** unix seconds */
  until: number
}

/** EMQ X 4's default ban length when `until` is not given. */
export const DEFAULT_BAN_SECONDS = 300
const SWEEP_MS = 60_000


export class BannedList {
  readonly #entries = new Map<string, BannedEntry>()
  readonly #store: TextStore
  #sweeper: NodeJS.Timeout | null = null

  constructor (store: TextStore, private readonly now: () => number = () => Date.now()) {
    this.#store = store
  }

  async open (): Promise<void> {
    for await (const [key, value] of this.#store.entries()) {
      this.#entries.set(key, JSON.parse(value) as BannedEntry)
    }
    await this.sweep()
    this.#sweeper = setInterval(() => { void this.sweep() }, SWEEP_MS)
    this.#sweeper.unref()
  }

  close (): void {
    if (this.#sweeper) clearInterval(this.#sweeper)
    this.#sweeper = null
  }

  list (): BannedEntry[] {
    return [...this.#entries.values()].filter((e) => this.#live(e))
  }

  async add (entry: BannedEntry): Promise<void> {
    const key = keyOf(entry.as, entry.who)
    await this.#store.put(key, JSON.stringify(entry))
    this.#entries.set(key, entry)
  }

  /** Returns false when there was no such entry. */
  async remove (as: BannedKind, who: string): Promise<boolean> {
    const key = keyOf(as, who)
    if (!this.#entries.has(key)) return false
    await this.#store.del(key)
    this.#entries.delete(key)
    return true
  }

  /** The live entry that bans this client, if any. */
  match (client: { clientId: string, username?: string, ipAddress: string }): BannedEntry | undefined {
    if (this.#entries.size === 0) return undefined
    return this.#find('client_id', client.clientId) ??
      (client.username !== undefined ? this.#find('username', client.username) : undefined) ??
      this.#find('ip_address', client.ipAddress)
  }

  async sweep (): Promise<void> {
    for (const [key, entry] of this.#entries) {
      if (!this.#live(entry)) {
        this.#entries.delete(key)
        await this.#store.del(key)
      }
    }
  }

  #find (as: BannedKind, who: string): BannedEntry | undefined {
    const entry = this.#entries.get(keyOf(as, who))
    return entry !== undefined && this.#live(entry) ? entry : undefined
  }

  #live (entry: BannedEntry): boolean {
    return entry.until * 1000 > this.now()
  }
}

function keyOf (as: BannedKind, who: string): string {
  return `${as}:${who}`
}
