// The hook registry: handlers by hook point, ordered by priority (higher
// first), then by their owner's place in the plugin chain (data/loaded_plugins
// order), then by registration. The ordered lists are rebuilt only when a
// handler is added or removed, so the hot path reads a plain array.
import type { Logger } from '../log.js'
import type { CHAIN_HOOKS, FOLD_HOOKS, HookHandlers, HookName } from './types.js'

interface Entry { handler: HookHandlers[HookName], priority: number, owner: string, seq: number }

export class HookRegistry {
  readonly #entries = new Map<HookName, Entry[]>()
  readonly #ordered = new Map<HookName, Array<HookHandlers[HookName]>>()
  #seq = 0
  readonly #failures = new Map<HookName, { at: number, skipped: number }>()

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
