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
import { execFile } from 'node:child_process'
import { readdir } from 'node:fs/promises'
import { register } from 'node:module'
import { dirname, join, sep } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const CODE = 'broker-code'
const SCOPE = 'broker-scope'
/** an import error's message is cut there (a compiler may report pages) */
const MAX_MESSAGE = 2000

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
 * Why an import failed, as `file:line: message` where the error tells: a
 * compiler's report (ts-node) names file and line in its message; a
 * SyntaxError of a module names none in Node 20, so the folder's JS files
 * are checked one by one (`node --check`) for the first that does not parse;
 * other errors name their first frame in the plugin's folder. One line.
 */
export async function importFailure (err: unknown, folder: string): Promise<string> {
  const error = err instanceof Error ? err : new Error(String(err))
  const message = oneLine(`${error.name}: ${error.message}`)
  if (error.name === 'SyntaxError') return await syntaxErrorIn(folder) ?? message
  const frame = frameIn(error.stack ?? '', folder)
  return frame === undefined ? message : `${frame}: ${message}`
}

/** `file:line` of the stack's first frame in `folder`: a file URL (with the fresh-import query) or, source-mapped, a path. */
function frameIn (stack: string, folder: string): string | undefined {
  for (const line of stack.split('\n').slice(1)) {
    const found = /(file:\/\/[^\s?)]+|\/[^\s?():]+)(?:\?[^\s:)]*)?:(\d+)(?::\d+)?\)?$/.exec(line.trim())
    if (found === null) continue
    const path = found[1].startsWith('file:') ? fileURLToPath(found[1]) : found[1]
    if (path.startsWith(folder + sep)) return `${path}:${found[2]}`
  }
  return undefined
}

/** A compiler may report pages over many lines: one line, cut. */
function oneLine (text: string): string {
  return text.trim().replace(/\s*\n\s*/g, ' ').slice(0, MAX_MESSAGE)
}

/** At most this many files are checked for a syntax error. */
const MAX_CHECKED = 200

/** `file:line: SyntaxError: …` of the first JS file of `folder` that does not parse (not in node_modules or test/). */
async function syntaxErrorIn (folder: string): Promise<string | undefined> {
  const files = (await readdir(folder, { recursive: true }).catch(() => []))
    .filter((file) => /\.m?js$/.test(file) && !file.split(sep).some((part) => part === 'node_modules' || part === 'test'))
    .sort().slice(0, MAX_CHECKED)
  for (const file of files) {
    const stderr = await new Promise<string | undefined>((resolve) => {
      execFile(process.execPath, ['--check', join(folder, file)], { timeout: 10_000 }, (error, _stdout, text) => resolve(error === null ? undefined : text))
    })
    if (stderr === undefined) continue
    const where = /^(.*):(\d+)$/m.exec(stderr)
    const what = /^SyntaxError: .*$/m.exec(stderr)
    if (where !== null && what !== null) return oneLine(`${where[1]}:${where[2]}: ${what[0]}`)
  }
  return undefined
}
