// The log file with rotation by size and count: `broker.log` is written
// until the next record would take it past `maxSize`; then `broker.log.1`
// moves to `.2` and so on, `broker.log` becomes `.1`, and a fresh
// `broker.log` is opened. At most `maxCount` files exist (the current one
// included); the oldest is deleted. Writes are synchronous (as pino's own
// file destination), so the size is exact and a rotation never races a
// write. A write that fails (disk full) drops the record and says so once on
// stderr instead of crashing the node; the next record tries again.
import { closeSync, existsSync, fstatSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs'
import { dirname } from 'node:path'

export class RotatingFile {
  #fd: number | null = null
  #size = 0
  #failing = false

  /** Opens (creating its folder) or appends to `path`; throws when it cannot, so a bad path stops start-up. */
  constructor (readonly path: string, readonly maxSize: number, readonly maxCount: number) {
    mkdirSync(dirname(path), { recursive: true })
    this.#open()
  }

  write (data: string): boolean {
    const bytes = Buffer.byteLength(data)
    try {
      if (this.#fd === null) this.#open()
      else if (this.#size > 0 && this.#size + bytes > this.maxSize) this.#rotate()
      writeSync(this.#fd!, data)
      this.#size += bytes
      this.#failing = false
    } catch (err) {
      if (!this.#failing) process.stderr.write(`log file ${this.path}: ${(err as Error).message}; records are dropped until it can be written\n`)
      this.#failing = true
    }
    return true
  }

  flushSync (): void {}

  end (): void {
    if (this.#fd !== null) closeSync(this.#fd)
    this.#fd = null
  }

  #open (): void {
    // records name clients, users and addresses: for the node's user only
    this.#fd = openSync(this.path, 'a', 0o600)
    this.#size = fstatSync(this.#fd).size
  }

  #rotate (): void {
    this.end()
    const kept = (n: number): string => `${this.path}.${n}`
    if (this.maxCount === 1) {
      rmSync(this.path, { force: true })
    } else {
      rmSync(kept(this.maxCount - 1), { force: true })
      for (let n = this.maxCount - 2; n >= 1; n--) {
        if (existsSync(kept(n))) renameSync(kept(n), kept(n + 1))
      }
      renameSync(this.path, kept(1))
    }
    this.#open()
  }
}
