// Block-wise transfer (RFC 7959): the Block1/Block2 option value (NUM, M,
// SZX), the reassembly of a request body sent in Block1 blocks, and the
// representations kept for a peer's Block2 follow-up requests. Both stores
// are bounded (entries and bytes) and forget an entry after its lifetime.
import { readUint, uintOption } from './message.js'

export interface Block {
  num: number
  more: boolean
  /** the block size is 2 ** (szx + 4): 16 … 1024 bytes */
  szx: number
}

/** The block size of an SZX. */
export function blockSize (szx: number): number {
  return 1 << (szx + 4)
}

/** The largest SZX (6: 1024 bytes). */
export const MAX_SZX = 6

/** A Block1/Block2 option value read back; undefined for one that is not valid (more than 3 bytes, SZX 7). */
export function readBlock (value: Buffer): Block | undefined {
  if (value.length > 3) return undefined
  const n = readUint(value)!
  const szx = n & 0x7
  if (szx === 7) return undefined
  return { num: n >>> 4, more: (n & 0x8) !== 0, szx }
}

export function blockOption (block: Block): Buffer {
  if (block.num > 0xfffff) throw new RangeError(`block number ${block.num} (at most 2^20 - 1)`)
  return uintOption(block.num * 16 + (block.more ? 8 : 0) + block.szx)
}

/** Block `num` of `body` in blocks of `szx`; undefined past the end (a block 0 of an empty body is empty). */
export function sliceBlock (body: Buffer, num: number, szx: number): { payload: Buffer, more: boolean } | undefined {
  const size = blockSize(szx)
  const start = num * size
  if (start > 0 && start >= body.length) return undefined
  const end = Math.min(body.length, start + size)
  return { payload: body.subarray(start, end), more: end < body.length }
}

interface Entry<T> { value: T, bytes: number, expires: number }

/**
 * Keyed entries with a lifetime, a count limit and a byte budget: an entry
 * past its lifetime is gone; adding beyond a limit evicts the oldest.
 */
export class BoundedStore<T> {
  readonly #entries = new Map<string, Entry<T>>()
  #bytes = 0

  constructor (readonly limits: { entries: number, bytes: number, lifetimeMs: number }) {}

  get size (): number {
    return this.#entries.size
  }

  get bytes (): number {
    return this.#bytes
  }

  get (key: string, now = Date.now()): T | undefined {
    const entry = this.#entries.get(key)
    if (entry === undefined) return undefined
    if (entry.expires <= now) {
      this.delete(key)
      return undefined
    }
    return entry.value
  }

  /** false when `bytes` alone is over the budget (nothing stored) */
  set (key: string, value: T, bytes: number, now = Date.now()): boolean {
    if (bytes > this.limits.bytes) return false
    this.delete(key)
    while (this.#entries.size > 0 && (this.#entries.size >= this.limits.entries || this.#bytes + bytes > this.limits.bytes)) {
      this.delete(this.#entries.keys().next().value!)
    }
    this.#entries.set(key, { value, bytes, expires: now + this.limits.lifetimeMs })
    this.#bytes += bytes
    return true
  }

  delete (key: string): void {
    const entry = this.#entries.get(key)
    if (entry === undefined) return
    this.#entries.delete(key)
    this.#bytes -= entry.bytes
  }

  /** drops the entries past their lifetime (oldest first: stops at the first one still alive) */
  sweep (now = Date.now()): void {
    for (const [key, entry] of this.#entries) {
      if (entry.expires > now) return
      this.delete(key)
    }
  }

  clear (): void {
    this.#entries.clear()
    this.#bytes = 0
  }
}

/** What one Block1 block does to the body being put together. */
export type Block1Step =
  | { kind: 'continue' }
  | { kind: 'complete', body: Buffer }
  /** 4.08 Request Entity Incomplete: not the block expected next (RFC 7959 §2.9.2) */
  | { kind: 'incomplete', why: string }
  /** 4.13 Request Entity Too Large: past `maxBody`, or no room left (RFC 7959 §2.9.3) */
  | { kind: 'too_large', why: string }

interface Assembly { parts: Buffer[], length: number, next: number, szx: number }

/**
 * Request bodies sent in Block1 blocks, by the request's key (the peer and
 * the request URI: RFC 7959 §2.5, not the token). Block 0 starts a body,
 * each next block must follow it at its byte offset; the last block (M=0)
 * gives the whole body.
 */
export class Block1Assembler {
  readonly #store: BoundedStore<Assembly>

  constructor (readonly maxBody: number, limits: { entries: number, bytes: number, lifetimeMs: number }) {
    this.#store = new BoundedStore(limits)
  }

  get size (): number {
    return this.#store.size
  }

  add (key: string, block: Block, payload: Buffer, size1?: number): Block1Step {
    if (size1 !== undefined && size1 > this.maxBody) return { kind: 'too_large', why: `Size1 ${size1} is over ${this.maxBody} bytes` }
    const size = blockSize(block.szx)
    // every block but the last carries exactly its size (RFC 7959 §2.3)
    if (block.more && payload.length !== size) return { kind: 'incomplete', why: `block ${block.num} carries ${payload.length} bytes, not ${size}` }
    if (!block.more && payload.length > size) return { kind: 'incomplete', why: `block ${block.num} carries ${payload.length} bytes, more than ${size}` }
    let assembly: Assembly | undefined
    if (block.num === 0) {
      assembly = { parts: [], length: 0, next: 0, szx: block.szx }
    } else {
      assembly = this.#store.get(key)
      // a smaller block size mid-way is allowed when the byte offset matches (RFC 7959 §2.5)
      if (assembly === undefined || assembly.next !== block.num * size) {
        this.#store.delete(key)
        return { kind: 'incomplete', why: assembly === undefined ? `block ${block.num} of a body whose first block is unknown` : `block ${block.num} is not the next (byte ${block.num * size}, expected ${assembly.next})` }
      }
    }
    const length = assembly.length + payload.length
    if (length > this.maxBody) {
      this.#store.delete(key)
      return { kind: 'too_large', why: `the body is over ${this.maxBody} bytes` }
    }
    assembly.parts.push(Buffer.from(payload))
    assembly.length = length
    assembly.next = length
    assembly.szx = block.szx
    if (!block.more) {
      this.#store.delete(key)
      return { kind: 'complete', body: Buffer.concat(assembly.parts) }
    }
    if (!this.#store.set(key, assembly, length)) return { kind: 'too_large', why: 'no room for the body now' }
    return { kind: 'continue' }
  }

  sweep (now?: number): void {
    this.#store.sweep(now)
  }

  clear (): void {
    this.#store.clear()
  }
}
