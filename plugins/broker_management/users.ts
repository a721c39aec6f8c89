// Administrator users (SPEC §2.17, §5.1): kept in the plugin's store as
// `user:<username>` → JSON `{username, tags, password}`, the password salted
// and hashed (lib/access/password-hash.ts), never plain. The default user
// (`dashboard.default_user.login` / `.password`) is recorded at load unless
// it is there already, so a changed password survives restarts; it cannot
// be deleted.
//
// Checks: stored-check.ts (remembered successes, the same work for unknown users).
import { hashForStorage, type PluginStore } from '../../lib/plugin-kit/admin.js'
import { StoredCheck } from './stored-check.js'

export { VERIFIED_TTL_MS } from './stored-check.js'

export interface User { username: string, tags: string }

interface StoredUser extends User { password: string }

const PREFIX = 'user:'

export class Users {
  readonly #check: StoredCheck

  constructor (private readonly store: PluginStore, readonly defaultUser: { login: string, password: string }, now: () => number = Date.now) {
    this.#check = new StoredCheck(now)
  }

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
    return await this.#check.verify(username, password, (await this.#get(username))?.password)
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
