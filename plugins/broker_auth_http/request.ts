// The HTTP calls, over undici: one Agent (at most pool_size keep-alive
// sockets per server) composed with undici's retry interceptor, a deadline
// per call (retries included), and retries with backoff after a connection
// failure only (an HTTP answer, even a 5xx, is never retried). GET sends the
// parameters as the query string, POST as an application/x-www-form-urlencoded
// body.
import { setTimeout as sleep } from 'node:timers/promises'
import { Agent, interceptors, request, type Dispatcher } from 'undici'
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
  constructor (message: string, readonly code: string) {
    super(message)
    this.name = 'TransportError'
  }
}

const MAX_BODY = 64 * 1024

/** Failures before any answer, worth another try: the server was not reached or dropped the connection. */
const RETRYABLE = Object.freeze(['ECONNRESET', 'ECONNREFUSED', 'ENOTFOUND', 'ENETDOWN', 'ENETUNREACH', 'EHOSTDOWN', 'EHOSTUNREACH', 'EPIPE', 'UND_ERR_SOCKET'])

type RetryCallback = (err?: Error | null) => void

export class HttpClient {
  readonly #options: ClientOptions
  readonly #agent: Agent
  readonly #dispatcher: Dispatcher
  readonly #stop = new AbortController()

  constructor (options: ClientOptions) {
    this.#options = options
    this.#agent = new Agent({ connections: options.poolSize })
    // undici's RetryHandler replays the request; when and whether is #retry's decision (a whole-call deadline, a close)
    this.#dispatcher = this.#agent.compose(interceptors.retry({ statusCodes: [], methods: ['GET', 'POST'], maxRetries: options.retryTimes }))
  }

  get closed (): boolean {
    return this.#stop.signal.aborted
  }

  /** Sends the request; resolves with any HTTP answer, rejects with a TransportError. */
  async send (method: Method, url: string, params: Array<[string, string]>): Promise<HttpAnswer> {
    if (this.closed) throw new TransportError('the HTTP client is closed', 'CLOSED')
    const target = new URL(url)
    const form = new URLSearchParams(params)
    if (method === 'get') for (const [name, value] of form) target.searchParams.append(name, value)
    const deadline = Date.now() + this.#options.timeout
    const late = new AbortController()
    const timer = setTimeout(() => late.abort(new TransportError(`no answer within ${this.#options.timeout}ms`, 'ETIMEDOUT')), this.#options.timeout)
    const signal = AbortSignal.any([this.#stop.signal, late.signal])
    try {
      const answer = await request(target, {
        dispatcher: this.#dispatcher,
        method: method === 'post' ? 'POST' : 'GET',
        headers: method === 'post' ? { accept: '*/*', 'content-type': 'application/x-www-form-urlencoded' } : { accept: '*/*' },
        body: method === 'post' ? form.toString() : undefined,
        signal,
        retryOptions: { retry: (err: Error, { state }: { state: { counter: number } }, done: RetryCallback) => this.#retry(err, state.counter, deadline, done) }
      } as Parameters<typeof request>[1])
      return { status: answer.statusCode, body: await text(answer.body) }
    } catch (err) {
      throw this.#failure(late.signal.aborted ? late.signal.reason : err)
    } finally {
      clearTimeout(timer)
    }
  }

  /** Ends every socket, idle or busy; calls in flight reject, later calls reject at once. */
  close (): void {
    this.#stop.abort()
    void this.#agent.destroy().catch(() => {})
  }

  /** Retry `counter` (1 = the first) after a failure: only a retryable one, within retry_times and before the deadline. */
  #retry (err: Error, counter: number, deadline: number, done: RetryCallback): void {
    const { retryTimes, retryInterval, retryBackoff } = this.#options
    const wait = Math.max(0, retryInterval * retryBackoff ** (counter - 1))
    const code = (err as NodeJS.ErrnoException).code ?? ''
    if (!RETRYABLE.includes(code) || counter > retryTimes || Date.now() + wait >= deadline || this.closed) return done(err)
    sleep(wait, undefined, { signal: this.#stop.signal }).then(() => done(null), () => done(err))
  }

  #failure (err: unknown): TransportError {
    if (err instanceof TransportError) return err
    if (this.closed) return new TransportError('the HTTP client is closed', 'CLOSED')
    const e = err as NodeJS.ErrnoException
    return new TransportError(e?.message ?? String(err), e?.code ?? 'ERROR')
  }
}

/** The body as text, at most MAX_BODY bytes kept (the rest is read and dropped, so the socket stays usable). */
async function text (body: AsyncIterable<Buffer>): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body) {
    if (size < MAX_BODY) chunks.push(chunk)
    size += chunk.length
  }
  return Buffer.concat(chunks).subarray(0, MAX_BODY).toString('utf8')
}
