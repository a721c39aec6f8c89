// The HTTP routes plugins add (`ctx.routes.add`), served by the management
// API under /api/v3 while both are loaded. Matching is hapi's own router
// (@hapi/call), rebuilt when a plugin adds or drops a route, so a plugin
// route reads its path parameters exactly as a built-in route does.
import { Router } from '@hapi/call'
import type { PluginRoute, PluginRouteMatch } from '../plugin-kit/contract.js'

interface Entry { owner: string, route: PluginRoute }

export class PluginRoutes {
  #entries: Entry[] = []
  #router = new Router()

  /** Adds a route; returns its removal. A method and path another route has already is refused. */
  add (owner: string, route: PluginRoute): () => void {
    const taken = this.#entries.find((e) => e.route.method === route.method && e.route.path === route.path)
    if (taken !== undefined) throw new Error(`route ${route.method} ${route.path} is served by ${taken.owner} already`)
    const entry = { owner, route }
    this.#entries.push(entry)
    this.#rebuild()
    return () => {
      this.#entries = this.#entries.filter((e) => e !== entry)
      this.#rebuild()
    }
  }

  /** The route for a request path under /api/v3 (`/delayed/7`), or undefined. */
  match (method: string, path: string): PluginRouteMatch | undefined {
    const found = this.#router.route(method.toLowerCase(), path)
    if (found instanceof Error) return undefined
    return { ...(found.route as Entry), params: found.params }
  }

  /** Every route, for listings (e.g. GET /api/v3/). */
  list (): Array<{ owner: string, method: string, path: string, route: PluginRoute }> {
    return this.#entries.map(({ owner, route }) => ({ owner, method: route.method, path: route.path, route }))
  }

  #rebuild (): void {
    const router = new Router()
    for (const entry of this.#entries) router.add({ method: entry.route.method.toLowerCase(), path: entry.route.path }, entry)
    this.#router = router
  }
}
