// What one plugin load registered, as a stack of releases: unwound newest
// first when the plugin unloads or its load fails. A release that throws is
// logged and the unwinding goes on, so one bad cleanup cannot leave the rest
// of the load behind.
import type { Logger } from '../log.js'

interface Release { what: string, run: () => void | Promise<void> }

export class Releases {
  #stack: Release[] = []

  /** `what` names the release in the log when it fails (e.g. `hook client.connected`). */
  push (what: string, run: () => void | Promise<void>): void {
    this.#stack.push({ what, run })
  }

  get size (): number {
    return this.#stack.length
  }

  /** Runs every release, newest first; resolves when all have run. Returns how many failed. */
  async unwind (logger: Logger): Promise<number> {
    let failed = 0
    while (this.#stack.length > 0) {
      const { what, run } = this.#stack.pop()!
      try {
        await run()
      } catch (err) {
        failed++
        logger.error({ err, release: what }, 'plugin release failed; releasing the rest')
      }
    }
    return failed
  }
}
