// Checking a name and password against a stored hashForStorage value, for
// the administrator users and the applications.
//
// A successful check is remembered for VERIFIED_TTL_MS (keyed by a SHA-256 of
// name and password, never the password itself) together with the stored hash
// it was checked against: both APIs check credentials on every request, and
// one pbkdf2 check (100 000 rounds) costs about 40 ms of CPU here. The caller
// reads the record from the store each time, so a password change or a removal
// — on this node or, in a cluster, on any other — ends the remembered check at
// once; failures are never remembered.
//
// An unknown name costs the same check as a known one (against a hash of a
// random password made once), so the time of an answer does not tell which
// names exist.
import { createHash, randomBytes } from 'node:crypto'
import { hashForStorage, verifyStored } from '../../lib/plugin-kit/admin.js'

export const VERIFIED_TTL_MS = 30_000

export class StoredCheck {
  /** key of a successful check → when it expires, and the stored hash it matched */
  readonly #verified = new Map<string, { until: number, stored: string }>()
  #decoy: Promise<string> | undefined

  constructor (private readonly now: () => number = Date.now) {}

  /** True when `stored` (undefined: no such name) is a hash of `password`. */
  async verify (name: string, password: string, stored: string | undefined): Promise<boolean> {
    const key = createHash('sha256').update(JSON.stringify([name, password])).digest('hex')
    const now = this.now()
    const remembered = this.#verified.get(key)
    if (stored !== undefined && remembered !== undefined && remembered.until > now && remembered.stored === stored) return true
    this.#verified.delete(key)
    this.#decoy ??= hashForStorage(randomBytes(16).toString('hex'))
    const ok = await verifyStored(password, stored ?? await this.#decoy) && stored !== undefined
    // remembered with the hash it matched: any later change of the stored record ends it
    if (ok) this.#verified.set(key, { until: now + VERIFIED_TTL_MS, stored })
    return ok
  }
}
