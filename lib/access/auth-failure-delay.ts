// `mqtt.auth_failure_delay`: how long a refused login waits for its CONNACK.
// The first refusal of a source address waits the set delay; each further one
// within WINDOW_MS waits twice as long as the one before, up to MAX_FACTOR
// times the delay. A password guesser on one address is slowed down; a client
// that mistyped once hardly notices.
import { SourceFailures } from './source-failures.js'

const WINDOW_MS = 5 * 60_000
const DOUBLINGS = 4
export const MAX_FACTOR = 2 ** DOUBLINGS

export class AuthFailureDelay {
  readonly #failures = new SourceFailures(WINDOW_MS)

  /** `delayMs`: the set delay (read at each refusal, so a changed setting applies at once); 0: none. */
  constructor (private readonly delayMs: () => number) {}

  /** Records one refusal of `source`; the milliseconds to wait before answering it. */
  next (source: string): number {
    const delay = this.delayMs()
    if (delay === 0) return 0
    const earlier = this.#failures.recent(source).length
    this.#failures.add(source, DOUBLINGS)
    return delay * 2 ** Math.min(earlier, DOUBLINGS)
  }
}
