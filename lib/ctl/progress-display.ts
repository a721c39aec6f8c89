// broker_ctl's side of progress (protocol.ts): what the node reports while a
// long operation runs, a counter while a big answer arrives and, on a
// terminal, the seconds waited so far. All of it goes to stderr, so stdout
// holds only the answer (--json output is never mixed with it). On a terminal
// it is one line that updates and is wiped before the answer; with
// --progress it is plain lines, for logs and scripts.

export type ProgressMode = 'terminal' | 'lines'

/** An answer smaller than this arrives at once: no counter. */
export const BIG_ANSWER_BYTES = 64 * 1024
const COUNTER_EVERY_MS = 250
const TICK_MS = 1000

export function byteSize (bytes: number): string {
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KiB`
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`
}

export class ProgressDisplay {
  #shownAt = 0
  #onScreen = false
  #counterAt = 0
  #answerBytes = 0
  readonly #started = Date.now()
  readonly #ticker: NodeJS.Timeout | undefined

  constructor (readonly mode: ProgressMode, private readonly out: Pick<NodeJS.WriteStream, 'write'> & { columns?: number } = process.stderr) {
    // a terminal shows that the node is still being waited for, a second at a time
    if (mode === 'terminal') {
      this.#ticker = setInterval(() => {
        if (Date.now() - this.#shownAt >= TICK_MS) this.#write(`waiting for the node: ${Math.round((Date.now() - this.#started) / 1000)} s`)
      }, TICK_MS).unref()
    }
  }

  /** A progress line from the node. */
  show (text: string): void {
    this.#write(text)
  }

  /** `bytes` of the answer have arrived so far. */
  receiving (bytes: number): void {
    this.#answerBytes = bytes
    if (bytes < BIG_ANSWER_BYTES || Date.now() - this.#counterAt < COUNTER_EVERY_MS) return
    this.#counterAt = Date.now()
    this.#write(`receiving the answer: ${byteSize(bytes)}`)
  }

  /** The answer is complete: the terminal line is wiped; as lines, a big answer's size is told. */
  done (): void {
    clearInterval(this.#ticker)
    if (this.mode === 'terminal' && this.#onScreen) this.out.write('\r\x1b[K')
    if (this.mode === 'lines' && this.#answerBytes >= BIG_ANSWER_BYTES) this.out.write(`received the answer: ${byteSize(this.#answerBytes)}\n`)
    this.#onScreen = false
  }

  #write (text: string): void {
    this.#shownAt = Date.now()
    if (this.mode === 'lines') {
      this.out.write(`${text}\n`)
    } else {
      // one screen line, or the wipe would leave the wrapped rest behind
      const width = this.out.columns ?? 80
      this.out.write(`\r\x1b[K${text.length < width ? text : text.slice(0, width - 2) + '…'}`)
      this.#onScreen = true
    }
  }
}
