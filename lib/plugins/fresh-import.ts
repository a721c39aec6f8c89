// Imports a plugin's code afresh (broker_reloader). ESM caches a module by
// its URL for the life of the process, so the new code of
// `<folder>/index.js` is imported as `index.js?broker-code=<n>&broker-scope=<folder>`,
// a URL never seen before. Its own imports would still resolve to the cached
// modules (`./helper.js` has no query), so a loader hook, registered on the
// first fresh import, gives every module resolved from such a URL the same
// query when it lies inside the plugin's folder (and not in a node_modules
// there): the whole folder is read again, while the plugin kit, node_modules
// and node: builtins stay the ones the node runs (one RouteError class, one
// Joi). Nothing is written to disk. The old modules stay in memory: ESM has
// no way to drop a module.
import { register } from 'node:module'
import { dirname } from 'node:path'
import { pathToFileURL } from 'node:url'

const CODE = 'broker-code'
/** an import error's message is cut there (a compiler may report pages) */
const MAX_MESSAGE = 2000
const SCOPE = 'broker-scope'

/** The loader hook (runs on Node's hooks thread): passes a fresh-import query on to the plugin's own modules. */
const HOOK_SOURCE = `
export async function resolve (specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context)
  const parent = context.parentURL
  if (parent === undefined || !parent.includes('${CODE}=') || !resolved.url.startsWith('file:')) return resolved
  const from = new URL(parent)
  const scope = from.searchParams.get('${SCOPE}')
  if (scope === null || from.searchParams.get('${CODE}') === null) return resolved
  const url = new URL(resolved.url)
  const inside = url.pathname.startsWith(scope) && !url.pathname.slice(scope.length).split('/').includes('node_modules')
  if (!inside || url.search !== '') return resolved
  url.search = from.search
  return { ...resolved, url: url.href }
}
`

/** Process-wide facts: a loader hook cannot be unregistered, and each fresh import needs a URL of its own. */
const state = { hooked: false, imports: 0 }

/** Imports the module at `file` and every module of its folder it imports, none of them from the cache. */
export async function importFresh (file: string): Promise<Record<string, unknown>> {
  if (!state.hooked) {
    register(`data:text/javascript,${encodeURIComponent(HOOK_SOURCE)}`)
    state.hooked = true
  }
  const url = pathToFileURL(file)
  const scope = pathToFileURL(dirname(file)).pathname + '/'
  url.search = new URLSearchParams({ [CODE]: String(++state.imports), [SCOPE]: scope }).toString()
  return await import(url.href) as Record<string, unknown>
}

/**
 * Where an import failed, as `file:line: message`: a SyntaxError's stack
 * starts with `file:///…?query:line`; other errors name the first frame in a
 * freshly imported file. The query is left out of the file name.
 */
export function importFailure (err: unknown): string {
  const error = err instanceof Error ? err : new Error(String(err))
  const stack = error.stack ?? ''
  const located = /^(file:\/\/[^\s?]+)(?:\?\S*?)?:(\d+)\s*$/m.exec(stack.split('\n')[0] ?? '') ??
    new RegExp(`(file://[^\\s?)]+)\\?${CODE}=[^\\s:)]*:(\\d+)`).exec(stack)
  // a compiler's report (ts-node) runs over several lines: kept, on one line
  const message = `${error.name}: ${error.message}`.trim().replace(/\s*\n\s*/g, ' ').slice(0, MAX_MESSAGE)
  if (located === null) return message
  return `${decodeURIComponent(new URL(located[1]).pathname)}:${located[2]}: ${message}`
}
