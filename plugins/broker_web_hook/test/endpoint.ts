// A real HTTP (or HTTPS) endpoint for the tests: it records every POST
// (path, headers, the JSON body) and answers as the test says: a status,
// `hang` (held until released or closed), or `drop` (the connection closed
// without an answer). `waitFor` resolves on the request that matches. And
// `delivery`: a Delivery for the tests, its counters, closed at the end.
import { once } from 'node:events'
import { createServer as createHttp, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http'
import { createServer as createHttps } from 'node:https'
import type { Socket } from 'node:net'
import type { TLSSocket } from 'node:tls'
import type { Test } from 'tap'
import { fakeContext } from '../../../lib/plugin-kit/testing.js'
import { Delivery, type DeliveryOptions } from '../delivery.js'

export interface Hit {
  method: string
  path: string
  headers: IncomingHttpHeaders
  /** the body parsed as JSON (undefined when it is not JSON) */
  body: Record<string, unknown>
  raw: string
  /** the TLS client certificate's subject CN, when one was presented */
  peerCN?: string
}

export type Reply = number | 'hang' | 'drop'

export interface Endpoint {
  port: number
  url: (path?: string) => string
  hits: Hit[]
  /** requests answered (any status) */
  answered: number
  /** connections accepted so far */
  connections: number
  /** connections open now */
  open: number
  /** sets the answer to each request from now on (default 200) */
  answer: (reply: (hit: Hit) => Reply) => void
  /** answers 200 to every held request */
  release: () => void
  /** the next request (already seen or to come) for which `match` holds */
  waitFor: (match: (hit: Hit) => boolean, ms?: number, what?: string) => Promise<Hit>
  /** the requests of one action, in arrival order */
  actions: (action: string) => Array<Record<string, unknown>>
  close: () => Promise<void>
}

export interface EndpointOptions {
  tls?: { cert: string, key: string, ca?: string, requestCert?: boolean }
  /** answer this port (an endpoint started again where it was) */
  port?: number
}

export async function startEndpoint (options: EndpointOptions = {}): Promise<Endpoint> {
  let reply: (hit: Hit) => Reply = () => 200
  const hits: Hit[] = []
  const held: ServerResponse[] = []
  const waiters: Array<{ match: (hit: Hit) => boolean, resolve: (hit: Hit) => void }> = []
  const sockets = new Set<Socket>()
  const state = { answered: 0, connections: 0 }
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8')
      let body: Record<string, unknown>
      try {
        body = JSON.parse(raw) as Record<string, unknown>
      } catch {
        body = {}
      }
      const cert = (req.socket as Partial<TLSSocket>).getPeerCertificate?.()
      const hit: Hit = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body, raw, peerCN: cert?.subject?.CN as string | undefined }
      hits.push(hit)
      for (const waiter of [...waiters]) {
        if (waiter.match(hit)) {
          waiters.splice(waiters.indexOf(waiter), 1)
          waiter.resolve(hit)
        }
      }
      const answer = reply(hit)
      if (answer === 'hang') {
        held.push(res)
        return
      }
      if (answer === 'drop') {
        req.socket.destroy()
        return
      }
      state.answered++
      res.writeHead(answer, { 'content-type': 'text/plain' }).end('ok')
    })
  }
  const server = options.tls === undefined
    ? createHttp(handle)
    : createHttps({ cert: options.tls.cert, key: options.tls.key, ca: options.tls.ca, requestCert: options.tls.requestCert === true, rejectUnauthorized: options.tls.requestCert === true }, handle)
  server.keepAliveTimeout = 60_000
  server.on(options.tls === undefined ? 'connection' : 'secureConnection', (socket: Socket) => {
    state.connections++
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
  })
  server.listen(options.port ?? 0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  const scheme = options.tls === undefined ? 'http' : 'https'
  return {
    port,
    url: (path = '/hook') => `${scheme}://127.0.0.1:${port}${path}`,
    hits,
    get answered () { return state.answered },
    get connections () { return state.connections },
    get open () { return sockets.size },
    answer (fn) { reply = fn },
    release () {
      for (const res of held.splice(0)) if (!res.destroyed) res.writeHead(200).end('ok')
    },
    async waitFor (match, ms = 20_000, what = 'a request') {
      const seen = hits.find(match)
      if (seen !== undefined) return seen
      return await new Promise<Hit>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(waiter), 1)
          reject(new Error(`no ${what} within ${ms}ms (${hits.length} requests seen)`))
        }, ms)
        const waiter = { match, resolve: (hit: Hit) => { clearTimeout(timer); resolve(hit) } }
        waiters.push(waiter)
      })
    },
    actions: (action) => hits.filter((hit) => hit.body.action === action).map((hit) => hit.body),
    async close () {
      for (const res of held.splice(0)) res.destroy()
      for (const socket of sockets) socket.destroy()
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  }
}

export interface Counts { sent: number, failed: number, dropped: number }

/** A Delivery as the plugin makes one (on this thread unless `thread` says otherwise), its counters, closed at the test's end. */
export function delivery (t: Test, url: string, options: Partial<DeliveryOptions> = {}): { delivery: Delivery, counts: Counts, ctx: ReturnType<typeof fakeContext> } {
  const ctx = fakeContext('broker_web_hook', {})
  const counts: Counts = { sent: 0, failed: 0, dropped: 0 }
  const counter = (name: keyof Counts): { inc: (by?: number) => void } => ({ inc: (by = 1) => { counts[name] += by } })
  const d = new Delivery({
    url,
    headers: {},
    tls: { verify: true },
    poolSize: 4,
    pipelining: 8,
    batchSize: 1,
    batchTime: 5,
    queueSize: 100,
    queueBytes: 1024 * 1024,
    timeout: 2000,
    retryTimes: 2,
    retryInterval: 20,
    retryBackoff: 2,
    counters: { sent: counter('sent'), failed: counter('failed'), dropped: counter('dropped') },
    alarms: ctx.alarms,
    logger: ctx.logger,
    plugin: 'broker_web_hook',
    thread: 'inline',
    ...options
  })
  t.teardown(async () => await d.close())
  return { delivery: d, counts, ctx }
}
