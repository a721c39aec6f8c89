// Applications (SPEC §5.1): the appid/secret pairs that authenticate every v3
// request, kept durably in the plugin's store as `app:<app_id>` → JSON. The
// default application comes from the settings: it is recorded at load (so it
// is listed and can be disabled), and its secret is always the configured one.
import { randomBytes, timingSafeEqual } from 'node:crypto'
import type { PluginStore } from '../../lib/plugins/contract.js'
import type { Role } from './roles.js'

export interface App {
  app_id: string
  name: string
  secret: string
  desc: string
  status: boolean
  /** unix seconds, or `undefined` for never */
  expired: number | 'undefined'
  /** absent in records written before roles: an administrator */
  role?: Role
}

const PREFIX = 'app:'

export class Apps {
  constructor (private readonly store: PluginStore, private readonly defaultApp: { id: string, secret: string }) {}

  /** Records the default application unless it is there already. */
  async seed (): Promise<void> {
    if (await this.get(this.defaultApp.id) !== undefined) return
    await this.put({ app_id: this.defaultApp.id, name: 'Default', secret: this.defaultApp.secret, desc: 'default application (management.default_application)', status: true, expired: 'undefined', role: 'administrator' })
  }

  async list (): Promise<App[]> {
    const apps: App[] = []
    for await (const [key, value] of this.store.entries()) {
      if (key.startsWith(PREFIX)) apps.push(this.#withSecret(JSON.parse(value) as App))
    }
    return apps
  }

  async get (appId: string): Promise<App | undefined> {
    const value = await this.store.get(PREFIX + appId)
    return value === undefined ? undefined : this.#withSecret(JSON.parse(value) as App)
  }

  async put (app: App): Promise<void> {
    await this.store.put(PREFIX + app.app_id, JSON.stringify(app))
  }

  async remove (appId: string): Promise<boolean> {
    if (await this.get(appId) === undefined) return false
    await this.store.del(PREFIX + appId)
    return true
  }

  /** True when the app exists (the default one always does unless recorded disabled), is enabled, not expired, and the secret matches. */
  async verify (appId: string, secret: string, now = Date.now()): Promise<boolean> {
    const app = await this.get(appId)
    if (app === undefined) return appId === this.defaultApp.id && same(secret, this.defaultApp.secret)
    if (!app.status) return false
    if (app.expired !== 'undefined' && app.expired * 1000 <= now) return false
    return same(secret, app.secret)
  }

  /** The role of an application (one not recorded is the default one: an administrator). */
  async role (appId: string): Promise<Role> {
    return (await this.get(appId))?.role ?? 'administrator'
  }

  #withSecret (app: App): App {
    return app.app_id === this.defaultApp.id ? { ...app, secret: this.defaultApp.secret } : app
  }
}

export function newSecret (): string {
  return randomBytes(24).toString('base64url')
}

function same (a: string, b: string): boolean {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}
