// The runner's side of the client workers (bench/worker.ts): fork, message, close.
import { fork, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import type { FromWorker, ToWorker } from './protocol.js'
import { ROOT, track } from './servers.js'

const CLOSE_TIMEOUT_MS = 5000

type Reply<T extends FromWorker['type']> = Extract<FromWorker, { type: T }>

export class Worker {
  readonly index: number
  onProgress: ((received: number) => void) | null = null
  private readonly child: ChildProcess
  private readonly exited: Promise<void>
  private waiter: { type: FromWorker['type'], resolve: (m: FromWorker) => void, reject: (e: Error) => void } | null = null
  /** First error the worker reported or its unexpected exit; every later wait fails with it. */
  private failure: Error | null = null

  constructor (index: number) {
    this.index = index
    this.child = fork(join(ROOT, 'dist', 'bench', 'worker.js'), [], { serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
    track(this.child)
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()))
    this.child.on('message', (msg: FromWorker) => {
      if (msg.type === 'progress') this.onProgress?.(msg.received)
      else if (msg.type === 'error') this.setFailure(new Error(`worker ${index}: ${msg.message}`))
      else if (this.waiter?.type === msg.type) {
        const w = this.waiter
        this.waiter = null
        w.resolve(msg)
      }
    })
    this.child.once('exit', (code, signal) => this.setFailure(new Error(`worker ${index} exited (${signal ?? `code ${code}`})`)))
  }

  send (msg: ToWorker): void {
    if (this.child.connected) this.child.send(msg)
  }

  async next<T extends FromWorker['type']> (type: T, timeoutMs: number): Promise<Reply<T>> {
    if (this.failure !== null) throw this.failure
    return await new Promise<Reply<T>>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiter = null
        reject(new Error(`worker ${this.index}: no '${type}' within ${Math.round(timeoutMs / 1000)} s`))
      }, timeoutMs)
      this.waiter = {
        type,
        resolve: (m) => { clearTimeout(timer); resolve(m as Reply<T>) },
        reject: (e) => { clearTimeout(timer); reject(e) }
      }
    })
  }

  /** Asks the worker to close its clients and exit; SIGKILL if it has not after CLOSE_TIMEOUT_MS. */
  async close (): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return
    this.setFailure(new Error(`worker ${this.index} closed`))
    this.send({ type: 'close' })
    const timer = setTimeout(() => this.child.kill('SIGKILL'), CLOSE_TIMEOUT_MS)
    await this.exited
    clearTimeout(timer)
  }

  private setFailure (err: Error): void {
    if (this.failure !== null) return
    this.failure = err
    this.waiter?.reject(err)
    this.waiter = null
  }
}
