// `management.login_rate`: failed logins (HTTP Basic credentials of either
// API, `POST /auth`, the old password of `change_pwd`) allowed per source
// address per minute. Past it the address is answered 429 with `Retry-After`
// until its oldest failure is a minute old, without checking anything. An
// attempt counts before its check and is taken back when it succeeds, so a
// burst of parallel guesses cannot overrun the budget.
import { SourceFailures } from '../../lib/plugin-kit/admin.js'
import { ApiError } from './errors.js'

const WINDOW_MS = 60_000

export class TooManyLogins extends ApiError {
  constructor (readonly retryAfter: number) {
    super(429, { message: `too many failed logins from this address; retry in ${retryAfter} s` })
  }
}

export class LoginLimit {
  readonly #failures: SourceFailures

  /** `perMinute` 0: no limit. */
  constructor (readonly perMinute: number, private readonly now: () => number = Date.now) {
    this.#failures = new SourceFailures(WINDOW_MS, now)
  }

  /** `verify`'s answer, unless `source` has used up its failures (TooManyLogins). */
  async check (source: string, verify: () => Promise<boolean>): Promise<boolean> {
    if (this.perMinute === 0) return await verify()
    const recent = this.#failures.recent(source)
    if (recent.length >= this.perMinute) throw new TooManyLogins(Math.max(1, Math.ceil((recent[0] + WINDOW_MS - this.now()) / 1000)))
    this.#failures.add(source, this.perMinute)
    const ok = await verify()
    if (ok) this.#failures.removeLatest(source)
    return ok
  }
}
