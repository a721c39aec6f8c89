// A request whose path is served, but not for its method, is refused with
// 405 Method Not Allowed and an `Allow` header naming the methods that are
// (RFC 9110 §15.5.6), instead of hapi's 404.
import type Hapi from '@hapi/hapi'
import { PLUGIN_BASE, type PluginRouteTable } from './plugin-routes.js'

const METHODS = Object.freeze(['GET', 'POST', 'PUT', 'DELETE', 'PATCH'] as const)

/** The methods `server` (or a plugin's route, in `plugins`) answers at `path` (HEAD with GET, as hapi serves it); empty when none. */
export function allowedMethods (server: Hapi.Server, path: string, plugins?: PluginRouteTable): string[] {
  // the router strips a trailing slash; match does not
  const routed = path.length > 1 ? path.replace(/\/$/, '') : path
  const pluginPath = plugins !== undefined && routed.startsWith(PLUGIN_BASE + '/') ? routed.slice(PLUGIN_BASE.length) : undefined
  const allowed: string[] = METHODS.filter((method) => served(server, method, routed) || (pluginPath !== undefined && plugins?.match(method, pluginPath) !== undefined))
  return allowed.includes('GET') ? ['GET', 'HEAD', ...allowed.filter((m) => m !== 'GET')] : allowed
}

function served (server: Hapi.Server, method: typeof METHODS[number], path: string): boolean {
  try {
    const route = server.match(method, path)
    // the catch-all of the plugins' routes (plugin-routes.ts) does not count: it answers for the paths plugins serve
    return route !== null && (route.settings.app as { catchAll?: boolean } | undefined)?.catchAll !== true
  } catch {
    // a path the router cannot decode (a stray `%`, found by the fuzzer) is served for no method
    return false
  }
}
