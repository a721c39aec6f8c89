// Request/response between nodes over Redis pub/sub: a request goes to
// `<cluster>:rpc:<node>` with a correlation id, the answer comes back on
// `<cluster>:rpc-reply:<caller>`. A node that does not answer in time (or has
// no subscriber at all) is a `badrpc` failure, never a hang. Both directions
// are sealed with the cluster cookie (rpc-seal.ts): a message that does not
// open, is not addressed to this node, or repeats a served request is dropped.
import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'
import type { Logger } from '../log.js'
import { ReplayGuard, type RpcSeal } from './rpc-seal.js'
import { badrpc, ServiceError, type ServiceErrorJson } from '../service/service-error.js'

interface Request { id: string, from: string, to: string, method: string, args: unknown[] }
/** A failure travels as a ServiceError's JSON (an unexpected error as `failed`) and is rebuilt as one. */
type Reply = { id: string, from: string, to: string } & ({ ok: true, value: unknown } | { ok: false, error: ServiceErrorJson })

export type RpcHandler = (method: string, args: unknown[]) => Promise<unknown>

/** Refused messages are logged at most once per this long (anyone on the Redis server could flood the log). */
const REFUSAL_LOG_INTERVAL_MS = 60_000

export class ClusterRpc {
  readonly #pending = new Map<string, { node: string, resolve: (value: unknown) => void, reject: (err: Error) => void, timer: NodeJS.Timeout }>()
  readonly #served: ReplayGuard
  #refusals = 0
  #refusalLoggedAt = -Infinity

  constructor (
    private readonly pub: Redis,
    private readonly sub: Redis,
    private readonly prefix: string,
    private readonly self: string,
    private readonly handler: RpcHandler,
    private readonly timeoutMs: number,
    private readonly logger: Logger,
    private readonly seal: RpcSeal
  ) {
    this.#served = new ReplayGuard(seal.windowMs)
  }

  async start (): Promise<void> {
    this.sub.on('message', (channel: string, text: string) => {
      if (channel === this.#replies(this.self)) this.#reply(text)
      else void this.#serve(text)
    })
    await this.sub.subscribe(this.#requests(this.self), this.#replies(this.self))
  }

  async stop (): Promise<void> {
    for (const [id, pending] of this.#pending) {
      clearTimeout(pending.timer)
      pending.reject(badrpc(this.self, 'this node is stopping'))
      this.#pending.delete(id)
    }
    this.sub.disconnect()
  }

  /** Runs `method` on `node` (here, directly, when it is this node). */
  async call (node: string, method: string, args: unknown[]): Promise<unknown> {
    if (node === this.self) return await this.handler(method, args)
    const id = randomUUID()
    const answer = new Promise<unknown>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id)
        reject(badrpc(node, `no answer within ${this.timeoutMs} ms`))
      }, this.timeoutMs)
      this.#pending.set(id, { node, resolve, reject, timer })
    })
    // the answer (or the timeout) may come while the PUBLISH below is still awaited: rejected then, with no
    // handler yet, it would be an unhandled rejection and stop the node (a fast `not_online` under load did)
    answer.catch(() => {})
    const request: Request = { id, from: this.self, to: node, method, args }
    const listeners = await this.pub.publish(this.#requests(node), this.seal.seal(request))
    if (listeners === 0) {
      const pending = this.#pending.get(id)
      clearTimeout(pending?.timer)
      this.#pending.delete(id)
      pending?.reject(badrpc(node, 'it is not running'))
    }
    return await answer
  }

  #requests (node: string): string {
    return `${this.prefix}:rpc:${node}`
  }

  #replies (node: string): string {
    return `${this.prefix}:rpc-reply:${node}`
  }

  async #serve (text: string): Promise<void> {
    const opened = this.seal.open<Request>(text)
    if (!opened.ok) return this.#refused('request', opened.why)
    const request = opened.message
    if (request.to !== this.self) return this.#refused('request', `addressed to ${String(request.to)}`)
    if (typeof request.id !== 'string' || !this.#served.first(request.id, request.ts)) return this.#refused('request', 'replayed')
    const address = { id: request.id, from: this.self, to: request.from }
    let reply: Reply
    try {
      reply = { ...address, ok: true, value: await this.handler(request.method, request.args) }
    } catch (err) {
      reply = { ...address, ok: false, error: ServiceError.of(err).toJSON() }
    }
    await this.pub.publish(this.#replies(request.from), this.seal.seal(reply)).catch((err: Error) => {
      this.logger.warn({ err: err.message, to: request.from }, 'cluster reply not sent')
    })
  }

  #reply (text: string): void {
    const opened = this.seal.open<Reply>(text)
    if (!opened.ok) return this.#refused('reply', opened.why)
    const reply = opened.message
    const pending = this.#pending.get(reply.id)
    // a reply is taken once, from the node asked: a repeated or redirected one finds nothing pending
    if (pending === undefined || reply.to !== this.self || reply.from !== pending.node) return
    clearTimeout(pending.timer)
    this.#pending.delete(reply.id)
    if (reply.ok) pending.resolve(reply.value)
    else pending.reject(ServiceError.fromJSON(reply.error))
  }

  #refused (what: 'request' | 'reply', why: string): void {
    this.#refusals++
    const now = Date.now()
    if (now - this.#refusalLoggedAt < REFUSAL_LOG_INTERVAL_MS) return
    this.#refusalLoggedAt = now
    this.logger.warn({ why, refused: this.#refusals }, `cluster RPC ${what} refused: not sealed with this node's cluster.cookie, or stale or replayed`)
    this.#refusals = 0
  }
}
