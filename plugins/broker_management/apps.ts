// Applications (SPEC §5.1): the appid/secret pairs that authenticate every v3
// request, kept durably in the plugin's store as `app:<app_id>` → JSON with
// the secret salted and hashed (`secret_hash`, lib/access/password-hash.ts),
// never plain: a secret is shown once, when the application is created.
// Records written before secrets were hashed (a plain `secret`) are hashed at
// load. The default application comes from the settings: it is recorded at
// load (so it is listed and can be disabled), and its secret is always the
// configured one, so its record holds none.
import { randomBytes, timingSafeEqual } from 'node:crypto'
import { hashForStorage, type PluginStore } from '../../lib/plugin-kit/admin.js'
import type { Role } from './roles.js'
import { StoredCheck } from './stored-check.js'

/** An application as the API and broker_ctl show it (no secret). */
export interface App {
  app_id: string
  name: string
  desc: string
  status: boolean
  /** unix seconds, or `undefined` for never */
  expired: number | 'undefined'
  /** absent in records written before roles: an administrator */
  role?: Role
}

interface StoredApp extends App {
  secret_hash?: string
  /** plain, as written before secrets were hashed: hashed by `seed` */
  secret?: string
}

const PREFIX = 'app:'

export class Apps {
  readonly #check = new StoredCheck()

  constructor (private readonly store: PluginStore, private readonly defaultApp: { id: string, secret: string }) {}

  /** Hashes plain secrets left by older versions; records the default application unless it is there already. */
  async seed (): Promise<void> {
    for await (const [key, value] of this.store.entries()) {
      if (!key.startsWith(PREFIX)) continue
      const { secret, ...app } = JSON.parse(value) as StoredApp
      if (secret === undefined) continue
      await this.#put(app.app_id === this.defaultApp.id ? app : { ...app, secret_hash: await hashForStorage(secret) })
    }
    if (await this.#get(this.defaultApp.id) !== undefined) return
    await this.#put({ app_id: this.defaultApp.id, name: 'Default', desc: 'default application (management.default_application)', status: true, expired: 'undefined', role: 'administrator' })
  }

  async list (): Promise<App[]> {
    const apps: App[] = []
    for await (const [key, value] of this.store.entries()) {
      if (key.startsWith(PREFIX)) apps.push(publicApp(JSON.parse(value) as StoredApp))
    }
    return apps
  }

  async get (appId: string): Promise<App | undefined> {
    const app = await this.#get(appId)
    return app === undefined ? undefined : publicApp(app)
  }

  /** Records a new application with this secret (the caller checks that it does not exist). */
  async add (app: App, secret: string): Promise<void> {
    await this.#put({ ...app, secret_hash: await hashForStorage(secret) })
  }

  /** Changes the shown fields (the secret stays); false when there is no such application. */
  async update (appId: string, fields: Partial<Omit<App, 'app_id'>>): Promise<boolean> {
    const app = await this.#get(appId)
    if (app === undefined) return false
    await this.#put({ ...app, ...fields, app_id: appId })
    return true
  }

  async remove (appId: string): Promise<boolean> {
    if (await this.#get(appId) === undefined) return false
    await this.store.del(PREFIX + appId)
    return true
  }

  /** True when the app exists (the default one always does unless recorded disabled), is enabled, not expired, and the secret matches. */
  async verify (appId: string, secret: string, now = Date.now()): Promise<boolean> {
    const app = await this.#get(appId)
    const usable = app === undefined || (app.status && (app.expired === 'undefined' || app.expired * 1000 > now))
    if (appId === this.defaultApp.id) return usable && same(secret, this.defaultApp.secret)
    // an unknown, disabled or expired application costs the same check as a usable one
    return await this.#check.verify(appId, secret, app?.secret_hash) && app !== undefined && usable
  }

  /** The role of an application (one not recorded is the default one: an administrator). */
  async role (appId: string): Promise<Role> {
    return (await this.#get(appId))?.role ?? 'administrator'
  }

  async #get (appId: string): Promise<StoredApp | undefined> {
    const value = await this.store.get(PREFIX + appId)
    return value === undefined ? undefined : JSON.parse(value) as StoredApp
  }

  async #put (app: StoredApp): Promise<void> {
    await this.store.put(PREFIX + app.app_id, JSON.stringify(app))
  }
}

function publicApp ({ app_id: appId, name, desc, status, expired, role }: StoredApp): App {
  return { app_id: appId, name, desc, status, expired, role: role ?? 'administrator' }
}

export function newSecret (): string {
  return randomBytes(24).toString('base64url')
}

function same (a: string, b: string): boolean {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}
