// Request/response between nodes over Redis pub/sub: a request goes to
// `<cluster>:rpc:<node>` with a correlation id, the answer comes back on
// `<cluster>:rpc-reply:<caller>`. A node that does not answer in time (or has
// no subscriber at all) is a `badrpc` failure, never a hang.
import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'
import type { Logger } from '../log.js'

interface Request { id: string, from: string, method: string, args: unknown[] }
type Reply = { id: string, ok: true, value: unknown } | { id: string, ok: false, name: string, kind?: string, message: string }

/** A remote failure, rebuilt on the caller's side (`kind` as the node service's errors carry). */
export class RemoteError extends Error {
  constructor (readonly kind: string, message: string, name = 'ServiceError') {
    super(message)
    this.name = name
  }
}

export const badrpc = (node: string, why: string): RemoteError => new RemoteError('badrpc', `node ${node} did not answer: ${why}`)

export type RpcHandler = (method: string, args: unknown[]) => Promise<unknown>

export class ClusterRpc {
  readonly #pending = new Map<string, { resolve: (value: unknown) => void, reject: (err: Error) => void, timer: NodeJS.Timeout }>()

  constructor (
    private readonly pub: Redis,
    private readonly sub: Redis,
    private readonly prefix: string,
    private readonly self: string,
    private readonly handler: RpcHandler,
    private readonly timeoutMs: number,
    private readonly logger: Logger
  ) {}

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
      this.#pending.set(id, { resolve, reject, timer })
    })
    const request: Request = { id, from: this.self, method, args }
    const listeners = await this.pub.publish(this.#requests(node), JSON.stringify(request))
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
    let request: Request
    try {
      request = JSON.parse(text) as Request
    } catch {
      return
    }
    let reply: Reply
    try {
      reply = { id: request.id, ok: true, value: await this.handler(request.method, request.args) }
    } catch (err) {
      const e = err as Error & { kind?: string }
      reply = { id: request.id, ok: false, name: e.name, kind: e.kind, message: e.message }
    }
    await this.pub.publish(this.#replies(request.from), JSON.stringify(reply)).catch((err: Error) => {
      this.logger.warn({ err: err.message, to: request.from }, 'cluster reply not sent')
    })
  }

  #reply (text: string): void {
    const reply = JSON.parse(text) as Reply
    const pending = this.#pending.get(reply.id)
    if (pending === undefined) return
    clearTimeout(pending.timer)
    this.#pending.delete(reply.id)
    if (reply.ok) pending.resolve(reply.value)
    else pending.reject(new RemoteError(reply.kind ?? 'failed', reply.message, reply.name))
  }
}
