// The runner's side of forked client workers (bench/worker.ts, and the soak's
// bench/soak-worker.ts): fork, message, wait for a reply, close.
import { fork, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import type { FromWorker, ToWorker } from './protocol.js'
import { ROOT, track } from './servers.js'

const CLOSE_TIMEOUT_MS = 5000

/** What any worker may send: its own messages, and an error that fails every later wait. */
type WorkerMessage = { type: string } | { type: 'error', message: string }

export class ForkedWorker<To extends { type: string }, From extends WorkerMessage> {
  readonly index: number
  /** Sees every message the worker sends, before a waiting `next` gets it. */
  onMessage: ((msg: From) => void) | null = null
  private readonly child: ChildProcess
  private readonly exited: Promise<void>
  private waiter: { type: From['type'], resolve: (m: From) => void, reject: (e: Error) => void } | null = null
  /** First error the worker reported or its unexpected exit; every later wait fails with it. */
  private failed: Error | null = null

  /** The forked process's id (its CPU is read from /proc). */
  get pid (): number {
    if (this.child.pid === undefined) throw new Error(`worker ${this.index} has no pid`)
    return this.child.pid
  }

  /** Forks dist/bench/<script>. */
  constructor (index: number, script = 'worker.js') {
    this.index = index
    this.child = fork(join(ROOT, 'dist', 'bench', script), [], { serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
    track(this.child)
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()))
    this.child.on('message', (msg: From) => {
      this.onMessage?.(msg)
      if ('message' in msg && msg.type === 'error') this.setFailure(new Error(`worker ${index}: ${msg.message}`))
      else if (this.waiter?.type === msg.type) {
        const w = this.waiter
        this.waiter = null
        w.resolve(msg)
      }
    })
    this.child.once('exit', (code, signal) => this.setFailure(new Error(`worker ${index} exited (${signal ?? `code ${code}`})`)))
  }

  /** The worker's first error or its unexpected exit, null while it is well. */
  get failure (): Error | null {
    return this.failed
  }

  send (msg: To): void {
    if (this.child.connected) this.child.send(msg)
  }

  async next<T extends From['type']> (type: T, timeoutMs: number): Promise<Extract<From, { type: T }>> {
    if (this.failed !== null) throw this.failed
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiter = null
        reject(new Error(`worker ${this.index}: no '${type}' within ${Math.round(timeoutMs / 1000)} s`))
      }, timeoutMs)
      this.waiter = {
        type,
        resolve: (m) => { clearTimeout(timer); resolve(m as Extract<From, { type: T }>) },
        reject: (e) => { clearTimeout(timer); reject(e) }
      }
    })
  }

  /** Asks the worker to close its clients and exit; SIGKILL if it has not after CLOSE_TIMEOUT_MS. */
  async close (): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return
    this.setFailure(new Error(`worker ${this.index} closed`))
    // every worker's protocol has it
    if (this.child.connected) this.child.send({ type: 'close' })
    const timer = setTimeout(() => this.child.kill('SIGKILL'), CLOSE_TIMEOUT_MS)
    await this.exited
    clearTimeout(timer)
  }

  private setFailure (err: Error): void {
    if (this.failed !== null) return
    this.failed = err
    this.waiter?.reject(err)
    this.waiter = null
  }
}

/** A bench client worker (bench/worker.ts); `onProgress` sees its deliveries as they come. */
export class Worker extends ForkedWorker<ToWorker, FromWorker> {
  onProgress: ((received: number) => void) | null = null

  constructor (index: number) {
    super(index)
    this.onMessage = (msg) => { if (msg.type === 'progress') this.onProgress?.(msg.received) }
  }
}
