// How `bin/broker` answers signals through the node's life:
// - SIGTERM / SIGINT: the first one stops the node (during start-up: the
//   start stops at its next step and unwinds); any later one is ignored with
//   a log line — the graceful stop goes on, SIGKILL is the hard stop.
// - SIGHUP: reloads what can be reloaded (lib/node-reload.ts); during
//   start-up it waits for the node to run, while stopping it is ignored.
export type StopSignal = 'SIGTERM' | 'SIGINT'

export interface SignalLog {
  info: (fields: object, message: string) => void
  warn: (fields: object, message: string) => void
}

export class ProcessSignals {
  /** aborted by the first SIGTERM / SIGINT */
  readonly #stop = new AbortController()
  #reload: (() => void) | undefined
  #reloadAsked = false
  #stopping = false

  /** Takes SIGTERM, SIGINT and SIGHUP from Node's defaults (which end the process) for the rest of its life. */
  constructor (private log: SignalLog) {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => this.#onStop(signal))
    process.on('SIGHUP', () => this.#onHangup())
  }

  /** Aborted by the first SIGTERM or SIGINT; its reason is the signal's name. */
  get stopSignal (): AbortSignal {
    return this.#stop.signal
  }

  /** Where the log lines go from now on (the node's logger once it exists). */
  logTo (log: SignalLog): void {
    this.log = log
  }

  /** The node runs: SIGHUP calls `reload` from now on (at once if one came during start-up). */
  running (reload: () => void): void {
    this.#reload = reload
    if (this.#reloadAsked) {
      this.#reloadAsked = false
      this.log.info({ signal: 'SIGHUP' }, 'reloading: SIGHUP came during start-up')
      reload()
    }
  }

  /** The node stops: SIGHUP is ignored from now on. */
  stopping (): void {
    this.#stopping = true
  }

  #onStop (signal: StopSignal): void {
    if (this.#stop.signal.aborted) {
      this.log.warn({ signal }, `already stopping: ${signal} ignored (the graceful stop goes on; SIGKILL stops at once)`)
      return
    }
    this.#stopping = true
    this.log.info({ signal }, 'stopping')
    this.#stop.abort(signal)
  }

  #onHangup (): void {
    if (this.#stopping || this.#stop.signal.aborted) {
      this.log.warn({ signal: 'SIGHUP' }, 'stopping: SIGHUP ignored')
    } else if (this.#reload === undefined) {
      this.#reloadAsked = true
      this.log.info({ signal: 'SIGHUP' }, 'SIGHUP during start-up: the node reloads once it runs')
    } else {
      this.log.info({ signal: 'SIGHUP' }, 'reloading')
      this.#reload()
    }
  }
}
