// The node's side of the delivery: the bounded queue and the delivery thread.
// A hook handler offers an event: if the events waiting or under way (a count
// and their bytes, shared with the thread, and this batch's) leave room, it is
// written into this batch (handover.ts: a message.publish as its fields, whose
// body the thread writes; another event as its JSON body), else it is dropped
// (`webhook/dropped`). Every few ms the batch goes to the delivery thread
// (thread.ts) in one message; the thread posts them and reports what
// settled (`webhook/sent`, `webhook/failed`) and when the endpoint stops or
// starts answering (the alarm `broker_web_hook_unavailable`). Nothing here
// makes a hook handler wait.
import { MessageChannel, Worker } from 'node:worker_threads'
import * as net from 'node:net'
import * as tls from 'node:tls'
import type { Logger, MessageInfo, PluginContext } from '../../lib/plugin-kit/index.js'
import { base62, encodePayload, type PayloadEncoding } from './payload.js'
import { Batch, PendingPublishes, readBatch } from './handover.js'
import { deliveryThread, type FromThread, type ThreadSettings, type ToThread } from './thread.js'
import { runAsBatch, threadIdSource } from './policy.js'

/** An event to post other than message.publish (whose fields go over, see `publish`): its JSON body. */
export interface Pending {
  /** the client id the event is about: events of one client are posted in order */
  key: string
  /** what it holds while it waits (payload, topic, ids), in bytes */
  size: number
  body: () => string
}

export interface Counter { inc: (by?: number) => void }

export interface DeliveryOptions extends Omit<ThreadSettings, 'shared' | 'node' | 'encoding'> {
  /** the node's name and web.hook.encode_payload, for the message.publish bodies the thread writes */
  node?: string
  encoding?: PayloadEncoding
  /** ms an event waits for others to go to the thread with (web.hook.batch_time) */
  batchTime: number
  queueSize: number
  queueBytes: number
  counters: { sent: Counter, failed: Counter, dropped: Counter }
  alarms: PluginContext<unknown>['alarms']
  logger: Logger
  plugin: string
  /** where the delivery runs: a worker thread (default), or this thread (tests: the same code, covered) */
  thread?: 'worker' | 'inline'
}

/** Drops and events given up are logged at most this often, with how many since. */
const LOG_EVERY_MS = 10_000

/**
 * A batch goes to the thread after batch_time, or sooner once it holds this many events (a quarter of
 * queue_size at most): at a high rate its fixed costs (a buffer, a message, waking the thread) are shared by
 * as many events anyway, and the events waiting on the node leave the queue room.
 */
const HANDOVER_EVENTS = 1000

/** How long after a delivery thread died another is started. */
const RESTART_MS = 1000

// a CommonJS script, so that the thread starts from the same text under the tests' TypeScript loader and from dist/
const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
parentPort.postMessage({ type: 'thread', tid: ${threadIdSource} })
const sockets = { net: require('node:net'), tls: require('node:tls') }
${base62.toString()}
;(${deliveryThread.toString()})(parentPort, workerData.settings, sockets, ${encodePayload.toString()}, ${readBatch.toString()})
`

interface Thread { send: (message: ToThread) => void, stop: () => Promise<void> }

export class Delivery {
  readonly #options: DeliveryOptions
  readonly #shared = new Int32Array(new SharedArrayBuffer(8))
  readonly #alarmId: string
  readonly #server: string
  #thread: Thread | undefined
  #restart: NodeJS.Timeout | undefined
  #closed = false
  /** the events since the last message to the thread */
  #batch = new Batch()
  #flush: NodeJS.Timeout | undefined
  /** events that make a batch go before batch_time (HANDOVER_EVENTS) */
  readonly #handover: number
  /** drops and events given up not logged yet, and when each was last logged (one warning per LOG_EVERY_MS at most) */
  readonly #unlogged = { dropped: 0, failed: 0, failedAt: -Infinity }
  /** set for LOG_EVERY_MS after drops were logged */
  #dropsLogged: NodeJS.Timeout | undefined
  #down = false
  #threadId: number | undefined
  /** the message.publish events of this callback of the event loop, written into the batch at its end */
  readonly #pending = new PendingPublishes()
  readonly #writePending = (): void => this.#write()
  // made once: an arrow written in a method that runs per event would make V8 allocate a context for `this` on each call
  readonly #sendNow = (): void => this.#send()

  constructor (options: DeliveryOptions) {
    this.#options = options
    this.#handover = Math.max(1, Math.min(HANDOVER_EVENTS, Math.floor(options.queueSize / 4)))
    this.#alarmId = `${options.plugin}_unavailable`
    this.#server = new URL(options.url).origin
    this.#thread = this.#start()
  }

  /** Events waiting or under way. */
  get queued (): number {
    return Atomics.load(this.#shared, 0) + this.#batch.events + this.#pending.events
  }

  /** Their bytes. */
  get queuedBytes (): number {
    return Atomics.load(this.#shared, 1) + this.#batch.size + this.#pending.size
  }

  /** Whether the queue has room for one more event (of any size but too large a one). */
  get room (): boolean {
    return !this.#closed && this.queued < this.#options.queueSize
  }

  /** Counts an event dropped for want of room (the path of every event while the endpoint is down: no clock read). */
  drop (): void {
    this.#options.counters.dropped.inc()
    this.#unlogged.dropped++
    if (this.#dropsLogged !== undefined) return
    this.#options.logger.warn({ dropped: this.#unlogged.dropped, queued: this.queued, bytes: this.queuedBytes }, 'web hook queue full: events dropped (webhook/dropped)')
    this.#unlogged.dropped = 0
    this.#dropsLogged = setTimeout(() => { this.#dropsLogged = undefined }, LOG_EVERY_MS).unref()
  }

  /** Takes an event to post, or drops it (counted) when the queue is full. Never waits. */
  offer (item: Pending): void {
    if (!this.#fits(item.size)) return
    let body: string
    try {
      body = item.body()
    } catch (err) {
      this.#options.logger.error({ err }, 'web hook event could not be written as JSON')
      this.#options.counters.failed.inc()
      return
    }
    // after the message.publish events before it: one client's events are posted in order
    this.#write()
    this.#batch.body(item.key, item.size, body)
    this.#taken()
  }

  /**
   * Takes a message.publish to post (its fields: the delivery thread writes the body), or drops it. Never waits.
   * `publisher`: see Batch.publish. The events of one callback of the event loop (the messages of a socket read,
   * often hundreds) share one reading of the clock and are written into the batch together at its end, in one
   * loop: written as each came, between the engine's steps for it, the same work cost the event loop half as much
   * again (bench/README.md, web hook).
   */
  publish (size: number, message: MessageInfo, username: string | null, publisher?: object): void {
    if (!this.#fits(size)) return
    if (this.#pending.add(size, message, username, publisher)) queueMicrotask(this.#writePending)
  }

  /** Writes the pending message.publish events into the batch. */
  #write (): void {
    if (this.#pending.events === 0) return
    // unloaded meanwhile: forgotten, as the queued events are
    if (this.#closed) return this.#pending.forget()
    this.#pending.writeTo(this.#batch)
    this.#taken()
  }

  /** Whether an event of `size` bytes may join the queue; one that may not is dropped (counted). */
  #fits (size: number): boolean {
    if (this.#closed) return false
    if (this.room && this.queuedBytes + size <= this.#options.queueBytes) return true
    this.drop()
    return false
  }

  #taken (): void {
    if (this.#batch.events >= this.#handover) {
      clearTimeout(this.#flush)
      return this.#send()
    }
    // each message to the thread wakes it, and each lane it reaches writes to its connection: one batch per
    // batch_time keeps that a small part of the work at any rate of events
    this.#flush ??= setTimeout(this.#sendNow, this.#options.batchTime)
  }

  /** Stops posting: waiting events are forgotten, requests under way end, the alarm is cleared. */
  async close (): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    clearTimeout(this.#flush)
    clearTimeout(this.#restart)
    clearTimeout(this.#dropsLogged)
    const left = this.queued
    if (left > 0) this.#options.logger.info({ events: left }, 'web hook unloaded: queued events not posted')
    if (this.#down) this.#options.alarms.clear(this.#alarmId)
    await this.#thread?.stop()
  }

  /** Hands the batch to the thread in one message, its buffer transferred, not copied; its events join the shared count. */
  #send (): void {
    this.#flush = undefined
    const { bytes, length, events, size } = this.#batch.take()
    if (this.#thread === undefined) {
      // between a thread that died and the next
      this.#options.counters.failed.inc(events)
      return
    }
    Atomics.add(this.#shared, 0, events)
    Atomics.add(this.#shared, 1, size)
    this.#thread.send({ type: 'events', bytes, length })
  }

  #receive (message: FromThread): void {
    if (this.#closed) return
    const { counters, logger, alarms } = this.#options
    if (message.type === 'settled') {
      counters.sent.inc(message.sent)
      counters.failed.inc(message.failed)
      const unlogged = this.#unlogged
      unlogged.failed += message.failed
      const now = Date.now()
      if (unlogged.failed > 0 && now - unlogged.failedAt >= LOG_EVERY_MS) {
        logger.warn({ url: this.#options.url, failed: unlogged.failed, why: message.why }, 'web hook events given up (webhook/failed)')
        unlogged.failed = 0
        unlogged.failedAt = now
      }
    } else if (message.type === 'down') {
      this.#down = true
      logger.warn({ url: this.#options.url, error: message.error }, `${this.#server} unavailable; web hook events wait, then are dropped, until it answers again`)
      alarms.raise({ id: this.#alarmId, severity: 'warning', title: `${this.#options.plugin}: ${this.#server} unavailable`, summary: `${this.#server} unavailable: ${message.error}` })
    } else {
      this.#down = false
      logger.info({ url: this.#options.url }, `${this.#server} answers again`)
      alarms.clear(this.#alarmId)
    }
  }

  /** The worker's thread, once it said which (policy.ts: its wake-ups do not preempt the event loop). */
  #scheduled (tid: number | undefined): void {
    if (tid === undefined || this.#closed) return
    this.#threadId = tid
    void runAsBatch(tid).then((why) => {
      if (why !== undefined) this.#options.logger.info({ tid, why }, 'web hook delivery thread: scheduling policy unchanged')
    })
  }

  /** The kernel's id of the delivery thread (a worker on Linux), once it started. */
  get threadId (): number | undefined {
    return this.#threadId
  }

  #settings (): ThreadSettings {
    const { url, headers, tls, poolSize, pipelining, batchSize, timeout, retryTimes, retryInterval, retryBackoff } = this.#options
    const { node = '', encoding = 'none' } = this.#options
    return { url, headers, tls, poolSize, pipelining, batchSize, timeout, retryTimes, retryInterval, retryBackoff, node, encoding, shared: this.#shared }
  }

  #start (): Thread {
    if (this.#options.thread === 'inline') {
      const { port1, port2 } = new MessageChannel()
      const stopThread = deliveryThread(port2, this.#settings(), { net, tls }, encodePayload, readBatch)
      port1.on('message', (message: FromThread) => this.#receive(message))
      return {
        send: (message) => port1.postMessage(message, [message.bytes]),
        stop: async () => {
          await stopThread()
          port1.close()
        }
      }
    }
    const worker = new Worker(THREAD_SOURCE, {
      eval: true,
      // not the tests' TypeScript loader: the script is plain JavaScript
      execArgv: [],
      workerData: { settings: this.#settings() }
    })
    let stopping = false
    worker.on('message', (message: FromThread | { type: 'thread', tid?: number }) => {
      if (message.type === 'thread') this.#scheduled(message.tid)
      else this.#receive(message)
    })
    const died = (why: string): void => {
      if (stopping || this.#closed) return
      stopping = true
      // the events given to the thread (this batch's go to the next)
      const lost = Atomics.load(this.#shared, 0)
      this.#options.logger.error({ why, lost }, `web hook delivery thread stopped; another starts in ${RESTART_MS}ms`)
      this.#options.counters.failed.inc(lost)
      Atomics.store(this.#shared, 0, 0)
      Atomics.store(this.#shared, 1, 0)
      this.#thread = undefined
      void worker.terminate()
      this.#restart = setTimeout(() => { this.#thread = this.#start() }, RESTART_MS)
    }
    worker.on('error', (err) => died(err.message))
    worker.on('exit', (code) => died(`exit code ${code}`))
    return {
      send: (message) => worker.postMessage(message, [message.bytes]),
      stop: async () => {
        stopping = true
        await worker.terminate()
      }
    }
  }
}
