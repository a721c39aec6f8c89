// A real HTTP server for the tests: it records every request (method, path,
// query, form body) and answers as the test says.
import { once } from 'node:events'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { Socket } from 'node:net'
import { freePort } from '../../../lib/plugin-kit/testing.js'

export interface Seen {
  method: string
  path: string
  query: Record<string, string>
  /** the body decoded as a form (empty for none) */
  form: Record<string, string>
  rawBody: string
  contentType?: string
}

/** An answer, or `hang` (hold the answer back, see `held`) or `drop` (close the connection without answering). */
export type Reply = { status: number, body?: string } | 'hang' | 'drop'

export interface AuthServer {
  server: Server
  port: number
  /** requests seen, in arrival order */
  seen: Seen[]
  /** TCP connections accepted so far */
  connections: number
  /** server-side sockets still open */
  open: Set<Socket>
  /** answers held back by `hang`: each call sends 200 */
  held: Array<() => void>
  url: (path: string) => string
  /** sets how requests are answered (default: 200 with an empty body) */
  answer: (reply: (seen: Seen) => Reply) => void
  close: () => Promise<void>
}

function record (req: IncomingMessage, rawBody: string): Seen {
  const url = new URL(req.url ?? '/', 'http://localhost')
  return {
    method: req.method ?? '',
    path: url.pathname,
    query: Object.fromEntries(url.searchParams),
    form: Object.fromEntries(new URLSearchParams(rawBody)),
    rawBody,
    contentType: req.headers['content-type']
  }
}

export async function startAuthServer (): Promise<AuthServer> {
  let reply: (seen: Seen) => Reply = () => ({ status: 200 })
  const open = new Set<Socket>()
  const state = { connections: 0 }
  const seen: Seen[] = []
  const held: Array<() => void> = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const request = record(req, Buffer.concat(chunks).toString('utf8'))
      seen.push(request)
      const answer = reply(request)
      if (answer === 'hang') {
        held.push(() => { res.writeHead(200).end() })
        return
      }
      if (answer === 'drop') {
        req.socket.destroy()
        return
      }
      res.writeHead(answer.status, { 'content-type': 'text/plain' }).end(answer.body ?? '')
    })
  })
  server.on('connection', (socket: Socket) => {
    state.connections++
    open.add(socket)
    socket.once('close', () => open.delete(socket))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  return {
    server,
    port,
    seen,
    get connections () { return state.connections },
    open,
    held,
    url: (path) => `http://127.0.0.1:${port}${path}`,
    answer (fn) { reply = fn },
    async close () {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  }
}

/** A port on 127.0.0.1 where nothing listens (connection refused). */
export const deadPort = freePort

/** Resolves when `check` holds, polling every 10ms; rejects after `ms`. */
export async function until (check: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out after ${ms}ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}
