// The slow password functions (pbkdf2, PBKDF2-HMAC-MD4, bcrypt) run here, on worker threads
// of their own, one job at a time per thread. Not on the event loop: bcryptjs'
// async API still computes on the main thread, in slices of up to 100 ms. And
// not on libuv's pool (crypto.pbkdf2): LevelDB and the file system queue
// there, so a flood of wrong passwords (32 parallel checks of ~40 ms each)
// delayed every persisted QoS 1 message. Half the CPUs (at least one) hash;
// the others stay free for the event loop.
import { availableParallelism } from 'node:os'
import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import { md4ThreadSource } from './md4.js'

type Job =
  | { op: 'pbkdf2', password: string | Uint8Array, salt: string | Uint8Array, iterations: number, keylen: number, digest: string }
  | { op: 'pbkdf2_md4', password: string | Uint8Array, salt: string | Uint8Array, iterations: number, keylen: number }
  | { op: 'bcrypt_hash', password: string, salt: string }
  | { op: 'bcrypt_compare', password: string, hash: string }

// CommonJS, run by `eval`: the same text works from the TypeScript sources (tests) and from dist/
const THREAD = `
const { parentPort, workerData } = require('node:worker_threads')
const { pbkdf2Sync } = require('node:crypto')
const bcrypt = require(workerData.bcryptjs)
${md4ThreadSource()}
parentPort.on('message', ({ id, job }) => {
  try {
    let value
    if (job.op === 'pbkdf2') value = pbkdf2Sync(job.password, job.salt, job.iterations, job.keylen, job.digest)
    else if (job.op === 'pbkdf2_md4') value = pbkdf2Md4Sync(job.password, job.salt, job.iterations, job.keylen)
    else if (job.op === 'bcrypt_hash') value = bcrypt.hashSync(job.password, job.salt)
    else value = bcrypt.compareSync(job.password, job.hash)
    parentPort.postMessage({ id, value })
  } catch (err) {
    parentPort.postMessage({ id, error: String(err && err.message) })
  }
})
`

interface Pending { resolve: (value: unknown) => void, reject: (err: Error) => void }

class HashThread {
  readonly pending = new Map<number, Pending>()
  readonly #worker: Worker

  constructor (bcryptjs: string, onExit: (thread: HashThread) => void) {
    this.#worker = new Worker(THREAD, { eval: true, workerData: { bcryptjs } })
    this.#worker.unref()
    this.#worker.on('message', ({ id, value, error }: { id: number, value?: unknown, error?: string }) => {
      const job = this.pending.get(id)
      this.pending.delete(id)
      if (this.pending.size === 0) this.#worker.unref()
      if (error !== undefined) job?.reject(new Error(error))
      else job?.resolve(value)
    })
    this.#worker.on('error', (err) => this.#fail(err))
    this.#worker.on('exit', (code) => {
      this.#fail(new Error(`password hashing thread exited (${code})`))
      onExit(this)
    })
  }

  run (id: number, job: Job): Promise<unknown> {
    // referenced while it owes an answer, so a short-lived process waits for it
    if (this.pending.size === 0) this.#worker.ref()
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject })
      this.#worker.postMessage({ id, job })
    })
  }

  #fail (err: Error): void {
    for (const job of this.pending.values()) job.reject(err)
    this.pending.clear()
  }
}

const THREADS = Math.max(1, Math.floor(availableParallelism() / 2))
const BCRYPTJS = createRequire(import.meta.url).resolve('bcryptjs')
const threads: HashThread[] = []
let nextId = 0

/** The thread with the fewest jobs waiting; a new one while fewer than THREADS run. */
function thread (): HashThread {
  const idle = threads.find((t) => t.pending.size === 0)
  if (idle !== undefined) return idle
  if (threads.length < THREADS) {
    const created = new HashThread(BCRYPTJS, (gone) => threads.splice(threads.indexOf(gone) >>> 0, 1))
    threads.push(created)
    return created
  }
  return threads.reduce((a, b) => (b.pending.size < a.pending.size ? b : a))
}

async function run (job: Job): Promise<unknown> {
  return await thread().run(nextId++, job)
}

/** A derived key as the thread sent it (a Uint8Array once it crossed over) as a Buffer. */
async function derivedKey (job: Job): Promise<Buffer> {
  const key = await run(job) as Uint8Array
  return Buffer.from(key.buffer, key.byteOffset, key.byteLength)
}

/** crypto.pbkdf2, on a hashing thread. */
export async function pbkdf2 (password: string | Uint8Array, salt: string | Uint8Array, iterations: number, keylen: number, digest: string): Promise<Buffer> {
  return await derivedKey({ op: 'pbkdf2', password, salt, iterations, keylen, digest })
}

/** PBKDF2-HMAC-MD4 (./md4.ts, pure JS: OpenSSL 3 has no MD4), on a hashing thread. */
export async function pbkdf2Md4 (password: string | Uint8Array, salt: string | Uint8Array, iterations: number, keylen: number): Promise<Buffer> {
  return await derivedKey({ op: 'pbkdf2_md4', password, salt, iterations, keylen })
}

/** bcryptjs' hash with a given salt (`$2a$10$…`), on a hashing thread. */
export async function bcryptHash (password: string, salt: string): Promise<string> {
  return await run({ op: 'bcrypt_hash', password, salt }) as string
}

/** bcryptjs' compare against a full bcrypt hash, on a hashing thread. */
export async function bcryptCompare (password: string, hash: string): Promise<boolean> {
  return await run({ op: 'bcrypt_compare', password, hash }) as boolean
}
