// Starts a node's parts through one sequence of named steps and stops them in
// the exact reverse order. Each started step pushes its stop on a stack; a
// start that fails unwinds the stack and rethrows its error, and `stop()`
// unwinds the same stack. A stop that throws is logged and the unwinding goes
// on, so the parts after it (the store last) are still closed.
import type { Logger } from './log.js'

export type StopFn = () => unknown

/**
 * Runs one named step: `start`, then (when given) pushes `stop`, called with
 * what `start` returned. A start that throws pushes nothing: one that can fail
 * half-way undoes its own half.
 */
export type Step = <T>(name: string, start: () => T | Promise<T>, stop?: (started: T) => unknown) => Promise<T>

interface Started { name: string, stop: StopFn }

export class StartStopStack {
  readonly #stack: Started[] = []
  #starting: Promise<unknown> | undefined
  #stopping: Promise<void> | undefined

  constructor (private readonly logger: Logger) {}

  /** The started steps that have a stop, first started first. */
  get started (): string[] {
    return this.#stack.map((s) => s.name)
  }

  /**
   * Runs `sequence`, which calls `step` for each part in order. Whatever it
   * throws (a step's start or the code between steps) unwinds what started and
   * is rethrown as it was.
   */
  async start<T> (sequence: (step: Step) => Promise<T>): Promise<T> {
    if (this.#starting !== undefined) throw new Error('started already')
    const run = this.#run(sequence)
    this.#starting = run
    return await run
  }

  /** Unwinds the stack; a second call waits for the first. Called while starting, it stops the start at its next step. */
  async stop (): Promise<void> {
    this.#stopping ??= (async () => {
      await this.#starting?.catch(() => {})
      await this.#unwind()
    })()
    await this.#stopping
  }

  async #run<T> (sequence: (step: Step) => Promise<T>): Promise<T> {
    try {
      return await sequence(this.#step)
    } catch (err) {
      await this.#unwind()
      throw err
    }
  }

  readonly #step: Step = async (name, start, stop) => {
    if (this.#stopping !== undefined) throw new Error(`stopped while starting (before ${name})`)
    this.logger.debug({ step: name }, `starting ${name}`)
    let started
    try {
      started = await start()
    } catch (err) {
      this.logger.error({ step: name, err }, `starting ${name} failed`)
      throw err
    }
    if (stop !== undefined) this.#stack.push({ name, stop: () => stop(started) })
    return started
  }

  async #unwind (): Promise<void> {
    for (let part = this.#stack.pop(); part !== undefined; part = this.#stack.pop()) {
      try {
        await part.stop()
        this.logger.debug({ step: part.name }, `stopped ${part.name}`)
      } catch (err) {
        this.logger.error({ step: part.name, err }, `stopping ${part.name} failed; stopping the rest`)
      }
    }
  }
}

/** `fn` run at most once; every call gets the first call's promise (a stop two steps share). */
export function once (fn: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined
  return async () => await (running ??= fn())
}
