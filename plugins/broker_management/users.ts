// Administrator users (SPEC §2.17, §5.1): kept in the plugin's store as
// `user:<username>` → JSON `{username, tags, password}`, the password salted
// and hashed (lib/access/password-hash.ts), never plain. The default user
// (`dashboard.default_user.login` / `.password`) is recorded at load unless
// it is there already, so a changed password survives restarts; it cannot
// be deleted.
//
// A successful check is remembered for VERIFIED_TTL_MS (keyed by a SHA-256 of
// name and password, never the password itself) together with the stored hash
// it was checked against: the v2 API checks the administrator on every request,
// and one pbkdf2 check (100 000 rounds) costs about 40 ms of CPU here. The user
// is still read from the store each time, so a password change or a removal —
// on this node or, in a cluster, on any other — ends the remembered check at
// once; failures are never remembered.
import { createHash } from 'node:crypto'
import { hashForStorage, verifyStored } from '../../lib/access/password-hash.js'
import type { PluginStore } from '../../lib/plugins/contract.js'

export interface User { username: string, tags: string }

interface StoredUser extends User { password: string }

const PREFIX = 'user:'

export const VERIFIED_TTL_MS = 30_000

export class Users {
  /** key of a successful check → when it expires, and the stored hash it matched */
  readonly #verified = new Map<string, { until: number, stored: string }>()

  constructor (private readonly store: PluginStore, readonly defaultUser: { login: string, password: string }, private readonly now: () => number = Date.now) {}

  async seed (): Promise<void> {
    if (await this.#get(this.defaultUser.login) !== undefined) return
    await this.add(this.defaultUser.login, this.defaultUser.password, 'administrator')
  }

  async list (): Promise<User[]> {
    const users: User[] = []
    for await (const [key, value] of this.store.entries()) {
      if (key.startsWith(PREFIX)) users.push(publicUser(JSON.parse(value) as StoredUser))
    }
    return users
  }

  async get (username: string): Promise<User | undefined> {
    const user = await this.#get(username)
    return user === undefined ? undefined : publicUser(user)
  }

  /** Records a new user (the caller checks that it does not exist). */
  async add (username: string, password: string, tags: string): Promise<void> {
    await this.#put({ username, tags, password: await hashForStorage(password) })
  }

  /** False when there is no such user. */
  async setTags (username: string, tags: string): Promise<boolean> {
    const user = await this.#get(username)
    if (user === undefined) return false
    await this.#put({ ...user, tags })
    return true
  }

  async setPassword (username: string, password: string): Promise<void> {
    const user = await this.#get(username)
    if (user === undefined) return
    await this.#put({ ...user, password: await hashForStorage(password) })
  }

  async remove (username: string): Promise<boolean> {
    if (await this.#get(username) === undefined) return false
    await this.store.del(PREFIX + username)
    return true
  }

  /** True when the user exists and the password matches. */
  async verify (username: string, password: string): Promise<boolean> {
    const key = createHash('sha256').update(JSON.stringify([username, password])).digest('hex')
    const now = this.now()
    const user = await this.#get(username)
    const remembered = this.#verified.get(key)
    if (user !== undefined && remembered !== undefined && remembered.until > now && remembered.stored === user.password) return true
    this.#verified.delete(key)
    const ok = user !== undefined && await verifyStored(password, user.password)
    // remembered with the hash it matched: any later change of the stored user ends it
    if (ok) this.#verified.set(key, { until: now + VERIFIED_TTL_MS, stored: user.password })
    return ok
  }

  async #get (username: string): Promise<StoredUser | undefined> {
    const value = await this.store.get(PREFIX + username)
    return value === undefined ? undefined : JSON.parse(value) as StoredUser
  }

  async #put (user: StoredUser): Promise<void> {
    await this.store.put(PREFIX + user.username, JSON.stringify(user))
  }
}

function publicUser ({ username, tags }: StoredUser): User {
  return { username, tags }
}
