// The hook registry: handlers by hook point, ordered by priority (higher
// first), then by their owner's place in the plugin chain (data/loaded_plugins
// order), then by registration. The ordered lists are rebuilt only when a
// handler is added or removed, so the hot path reads a plain array.
//
// A plugin whose code is replaced (broker_reloader) is unloaded and loaded
// again: between the two its handlers are gone, and an auth or ACL chain
// asked then would fall through to mqtt.allow_anonymous or acl.conf, a fold
// would let a message pass unchanged. `holding` closes that window: while
// the swap runs, `held(hook)` gives the callers of those hooks a promise to
// wait for before they ask the handlers (calls made by the swap itself,
// e.g. the new load, are not held).
import { AsyncLocalStorage } from 'node:async_hooks'
import type { Logger } from '../log.js'
import type { CHAIN_HOOKS, FOLD_HOOKS, HookHandlers, HookName } from './types.js'

/**
 * The hooks whose callers wait while `held(hook)` answers a promise: the
 * chains (authentication, ACL, enhanced auth) and the folds that may answer
 * asynchronously (`message.publish`, `client.subscribe`). `client.unsubscribe`
 * and the notifications are synchronous: they run on with what is registered.
 */
export const HOLDABLE_HOOKS = Object.freeze(['client.authenticate', 'client.check_acl', 'client.enhanced_auth', 'message.publish', 'client.subscribe'] as const satisfies readonly HookName[])

interface Entry { handler: HookHandlers[HookName], priority: number, owner: string, seq: number }

export class HookRegistry {
  readonly #entries = new Map<HookName, Entry[]>()
  readonly #ordered = new Map<HookName, Array<HookHandlers[HookName]>>()
  #seq = 0
  readonly #failures = new Map<HookName, { at: number, skipped: number }>()
  /** per held hook, the swaps that hold it (each a promise settled when it ends) */
  readonly #holds = new Map<HookName, Set<Promise<void>>>()
  /**
   * marks the async flow of a swap with its hold, which lets that flow
   * through; a timer or server the swap started keeps the mark, but it is
   * one of that swap only, so a later swap holds it like any other caller
   */
  readonly #swapping = new AsyncLocalStorage<Promise<void>>()

  /** `ownerRank` gives an owner's place in the chain (lower runs first). */
  constructor (private readonly logger: Logger, private ownerRank: (owner: string) => number = () => 0) {}

  /** Adds a handler; returns its removal. */
  add<H extends HookName> (hook: H, handler: HookHandlers[H], owner: string, priority = 0): () => void {
    const entry: Entry = { handler: handler as HookHandlers[HookName], priority, owner, seq: this.#seq++ }
    this.#entries.set(hook, [...this.#entries.get(hook) ?? [], entry])
    this.#order(hook)
    return () => {
      this.#entries.set(hook, (this.#entries.get(hook) ?? []).filter((e) => e !== entry))
      this.#order(hook)
    }
  }

  /** Re-sorts every hook after the chain order changed. */
  reorder (ownerRank?: (owner: string) => number): void {
    if (ownerRank) this.ownerRank = ownerRank
    for (const hook of this.#entries.keys()) this.#order(hook)
  }

  handlers<H extends HookName> (hook: H): ReadonlyArray<HookHandlers[H]> {
    return (this.#ordered.get(hook) ?? []) as Array<HookHandlers[H]>
  }

  has (hook: HookName): boolean {
    return (this.#ordered.get(hook)?.length ?? 0) > 0
  }

  owners (hook: HookName): string[] {
    return [...(this.#entries.get(hook) ?? [])].sort((a, b) => this.#compare(a, b)).map((e) => e.owner)
  }

  /**
   * Runs `work` (a plugin's swap) while `hooks` (HOLDABLE ones) are held: until
   * it settles, `held(hook)` answers a promise that settles with it. Calls
   * made within `work`'s own async flow are not held (a load that waits on
   * an ACL check would otherwise wait for itself).
   */
  async holding<T> (hooks: readonly HookName[], work: () => Promise<T>): Promise<T> {
    if (hooks.length === 0) return await work()
    let release!: () => void
    const done = new Promise<void>((resolve) => { release = resolve })
    for (const hook of hooks) this.#holds.set(hook, (this.#holds.get(hook) ?? new Set()).add(done))
    try {
      return await this.#swapping.run(done, work)
    } finally {
      for (const hook of hooks) {
        const holds = this.#holds.get(hook)!
        holds.delete(done)
        if (holds.size === 0) this.#holds.delete(hook)
      }
      release()
    }
  }

  /** A promise to wait for before asking `hook`'s handlers, while a swap holds it; undefined otherwise (the usual case: one map size read). */
  held (hook: HookName): Promise<void> | undefined {
    if (this.#holds.size === 0) return undefined
    const holds = this.#holds.get(hook)
    if (holds === undefined) return undefined
    const own = this.#swapping.getStore()
    const others = own === undefined || !holds.has(own) ? [...holds] : [...holds].filter((hold) => hold !== own)
    if (others.length === 0) return undefined
    return others.length === 1 ? others[0] : Promise.all(others).then(() => {})
  }

  /** Resolves once no swap holds `hook` (a new hold may start while one is waited for). */
  async whenFree (hook: HookName): Promise<void> {
    for (let wait = this.held(hook); wait !== undefined; wait = this.held(hook)) await wait
  }

  /** Calls every handler of a notification hook; a handler's error is logged, never thrown. */
  notify<H extends Exclude<HookName, typeof CHAIN_HOOKS[number] | typeof FOLD_HOOKS[number]>> (hook: H, ...args: Parameters<HookHandlers[H]>): void {
    const list = this.#ordered.get(hook)
    if (list === undefined) return
    for (const handler of list) {
      try {
        (handler as (...a: unknown[]) => unknown)(...args)
      } catch (err) {
        this.logger.error({ err, hook }, 'hook handler failed')
      }
    }
  }

  /**
   * Logs a fold handler's failure (lib/hooks/folds.ts): one line per hook a
   * second at most, with how many were left out since, since a broken handler
   * on the publish path fails once per message.
   */
  failed (hook: HookName, err: unknown): void {
    const now = Date.now()
    const last = this.#failures.get(hook)
    if (last !== undefined && now - last.at < 1000) {
      last.skipped++
      return
    }
    this.#failures.set(hook, { at: now, skipped: 0 })
    this.logger.error({ err, hook, skipped: last?.skipped ?? 0 }, 'hook handler failed; skipped')
  }

  #order (hook: HookName): void {
    const list = this.#entries.get(hook) ?? []
    if (list.length === 0) {
      this.#ordered.delete(hook)
      return
    }
    this.#ordered.set(hook, [...list].sort((a, b) => this.#compare(a, b)).map((e) => e.handler))
  }

  #compare (a: Entry, b: Entry): number {
    return (b.priority - a.priority) || (this.ownerRank(a.owner) - this.ownerRank(b.owner)) || (a.seq - b.seq)
  }
}
