// The built console (`dashboard.docroot`, default ui/dist, made by
// `npm run build`): `GET /` (and any other page path outside /api/ and
// /assets/, for the page's own routing) is its index.html, `GET /assets/<file>`
// a file of its assets/ folder. A path segment is served only when it is a
// plain file name (letters, digits, `. _ -`, not starting with a dot), so no
// request can reach outside the folder; anything else is 404. index.html is
// revalidated each time (`no-cache`); assets, whose names change with their
// content, are kept a year. Without a build the page is a 503 saying how to
// make it.
import { readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import Boom from '@hapi/boom'
import type Hapi from '@hapi/hapi'

const SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/
const ASSET_MAX_AGE_S = 365 * 86_400
/** what the page may load and connect to: its own files, and the broker's WebSocket listeners (the WebSocket client page) */
const CONTENT_SECURITY_POLICY = "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; style-src 'self' 'unsafe-inline'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

const NOT_BUILT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Dashboard not built</title></head>
<body><h1>The dashboard is not built</h1>
<p>The console's files are missing from this install. Run <code>npm run build</code> in the broker's folder, then reload this page.</p>
</body></html>
`

/** The security headers of every page answer. */
export function pageHeaders (response: Hapi.ResponseObject): Hapi.ResponseObject {
  return response
    .header('Content-Security-Policy', CONTENT_SECURITY_POLICY)
    .header('X-Content-Type-Options', 'nosniff')
    .header('X-Frame-Options', 'DENY')
    .header('Referrer-Policy', 'no-referrer')
}

async function file (path: string): Promise<{ body: Buffer, mtime: Date } | undefined> {
  try {
    const info = await stat(path)
    if (!info.isFile()) return undefined
    return { body: await readFile(path), mtime: info.mtime }
  } catch {
    return undefined
  }
}

function etag (body: Buffer, mtime: Date): string {
  return `${body.length.toString(16)}-${mtime.getTime().toString(16)}`
}

export function staticRoutes (docroot: string): Hapi.ServerRoute[] {
  const index = async (h: Hapi.ResponseToolkit): Promise<Hapi.ResponseObject> => {
    const page = await file(join(docroot, 'index.html'))
    if (page === undefined) return pageHeaders(h.response(NOT_BUILT).type('text/html; charset=utf-8').code(503))
    return pageHeaders(h.response(page.body).type('text/html; charset=utf-8').header('Cache-Control', 'no-cache').etag(etag(page.body, page.mtime)))
  }
  return [
    { method: 'GET', path: '/', options: { auth: false }, handler: async (_request, h) => await index(h) },
    // a page path of the console's own routing (not /api/, not /assets/): the same page
    {
      method: 'GET',
      path: '/{page*}',
      options: { auth: false },
      handler: async (request, h) => request.path === '/api' || request.path.startsWith('/api/') ? Boom.notFound() : await index(h)
    },
    {
      method: 'GET',
      path: '/assets/{file*}',
      options: { auth: false },
      handler: async (request, h) => {
        const segments = String((request.params as { file?: string }).file ?? '').split('/')
        if (segments.some((segment) => !SEGMENT.test(segment))) return Boom.notFound()
        const asset = await file(join(docroot, 'assets', ...segments))
        if (asset === undefined) return Boom.notFound()
        return h.response(asset.body)
          .type((request.server.mime.path(segments[segments.length - 1]) as { type?: string }).type ?? 'application/octet-stream')
          .header('X-Content-Type-Options', 'nosniff')
          .header('Cache-Control', `public, max-age=${ASSET_MAX_AGE_S}, immutable`)
          .etag(etag(asset.body, asset.mtime))
      }
    }
  ]
}
