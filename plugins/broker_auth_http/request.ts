// The HTTP calls: one keep-alive agent per scheme (at most pool_size sockets
// per server), a deadline per call, and retries with backoff after a
// connection failure. GET sends the parameters as the query string, POST as
// an application/x-www-form-urlencoded body.
import http from 'node:http'
import https from 'node:https'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Method } from './settings.js'

export interface HttpAnswer {
  status: number
  /** the body as text (at most MAX_BODY bytes are kept) */
  body: string
}

export interface ClientOptions {
  /** milliseconds for the whole call, retries included */
  timeout: number
  retryTimes: number
  retryInterval: number
  retryBackoff: number
  poolSize: number
}

/** No HTTP answer: refused, reset, timed out, or the client was closed. */
export class TransportError extends Error {
  constructor (message: string, readonly code: string, readonly retryable: boolean) {
    super(message)
    this.name = 'TransportError'
  }
}

const MAX_BODY = 64 * 1024

function transportError (err: unknown, retryable: boolean): TransportError {
  if (err instanceof TransportError) return err
  const e = err as NodeJS.ErrnoException
  return new TransportError(e?.message ?? String(err), e?.code ?? 'ERROR', retryable)
}

export class HttpClient {
  readonly #options: ClientOptions
  readonly #agents: { 'http:': http.Agent, 'https:': https.Agent }
  readonly #stop = new AbortController()

  constructor (options: ClientOptions) {
    this.#options = options
    const agent = { keepAlive: true, maxSockets: options.poolSize, maxFreeSockets: options.poolSize }
    this.#agents = { 'http:': new http.Agent(agent), 'https:': new https.Agent(agent) }
  }

  get closed (): boolean {
    return this.#stop.signal.aborted
  }

  /** Sends the request; resolves with any HTTP answer, rejects with a TransportError. */
  async send (method: Method, url: string, params: Array<[string, string]>): Promise<HttpAnswer> {
    const target = new URL(url)
    const form = new URLSearchParams(params)
    if (method === 'get') for (const [name, value] of form) target.searchParams.append(name, value)
    const body = method === 'post' ? form.toString() : undefined
    const deadline = Date.now() + this.#options.timeout
    let delay = this.#options.retryInterval
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#attempt(method, target, body, deadline - Date.now())
      } catch (err) {
        const error = transportError(err, false)
        const wait = Math.max(0, delay)
        if (!error.retryable || attempt >= this.#options.retryTimes || Date.now() + wait >= deadline || this.closed) throw error
        await sleep(wait, undefined, { signal: this.#stop.signal }).catch(() => { throw error })
        delay *= this.#options.retryBackoff
      }
    }
  }

  /** Ends every socket, idle or busy; calls in flight reject, later calls reject at once. */
  close (): void {
    this.#stop.abort()
    this.#agents['http:'].destroy()
    this.#agents['https:'].destroy()
  }

  #attempt (method: Method, target: URL, body: string | undefined, remaining: number): Promise<HttpAnswer> {
    return new Promise((resolve, reject) => {
      if (this.closed) return reject(new TransportError('the HTTP client is closed', 'CLOSED', false))
      const agent = target.protocol === 'https:' ? this.#agents['https:'] : this.#agents['http:']
      const send = target.protocol === 'https:' ? https.request : http.request
      const headers: http.OutgoingHttpHeaders = { accept: '*/*' }
      if (body !== undefined) {
        headers['content-type'] = 'application/x-www-form-urlencoded'
        headers['content-length'] = Buffer.byteLength(body)
      }
      let settled = false
      let responded = false
      const finish = (err: unknown, answer?: HttpAnswer): void => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        if (answer) resolve(answer)
        else reject(err)
      }
      const req = send(target, { method: method.toUpperCase(), agent, headers, signal: this.#stop.signal })
      const timer = setTimeout(() => {
        const error = new TransportError(`no answer within ${this.#options.timeout}ms`, 'ETIMEDOUT', false)
        finish(error)
        req.destroy(error)
      }, Math.max(0, remaining))
      req.on('error', (err) => finish(transportError(err, !responded)))
      req.on('response', (res) => {
        responded = true
        const chunks: Buffer[] = []
        let size = 0
        res.on('data', (chunk: Buffer) => {
          if (size < MAX_BODY) chunks.push(chunk)
          size += chunk.length
        })
        res.on('error', (err) => finish(transportError(err, false)))
        res.on('close', () => {
          if (!res.complete) finish(new TransportError('the answer was cut off', 'ECONNRESET', false))
        })
        res.on('end', () => {
          const text = Buffer.concat(chunks).subarray(0, MAX_BODY).toString('utf8')
          finish(undefined, { status: res.statusCode ?? 0, body: text })
        })
      })
      req.end(body)
    })
  }
}
