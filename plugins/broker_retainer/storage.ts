// What the three storage types share: the contract each keeps, and the
// read-back of the plugin's store at load, which re-checks every entry as if
// it came from outside — a malformed one is logged and removed, an expired
// one removed, and the limits in force now applied (a payload over
// max_payload_size, or entries beyond max_retained_messages, are removed).
import type { Logger, PluginStore, RetainedMessage } from '../../lib/plugin-kit/index.js'
import { decode } from './codec.js'

export type Maybe<T> = T | Promise<T>

/** Where the retained messages are kept: ram (memory.ts), disc (disc.ts), disc_only and the cluster's store (store-only.ts). */
export interface Storage {
  /** how many it keeps (no work: the statistics read it often) */
  count: () => number
  /** counts again where others change the store too (a cluster's); nothing to do elsewhere */
  recount: () => Promise<void>
  /** keeps `message` unless its topic is new and `max` (> 0) are kept already; answers whether it kept it */
  put: (message: RetainedMessage, max: number) => Maybe<boolean>
  remove: (topic: string) => Maybe<void>
  get: (topic: string) => Maybe<RetainedMessage | undefined>
  /** the kept messages whose topic `accept` takes */
  scan: (accept: (topic: string) => boolean) => Iterable<RetainedMessage> | AsyncIterable<RetainedMessage>
  /** removes the messages expired at `now`; answers how many */
  sweep: (now: number) => Promise<number>
  topics: () => Iterable<string> | AsyncIterable<string>
  /** removes them all; answers how many there were */
  clear: () => Promise<number>
  /** when the load ends (ram writes its messages to the store) */
  close: () => Promise<void>
}

export interface Limits { maxPayload: number, maxCount: number }

/** How many malformed entries are logged one by one at a read-back (then only counted). */
const LOGGED_ONE_BY_ONE = 10

/** Every valid retained message of the store, after the checks; what fails them is removed from the store. */
export async function * readBack (store: PluginStore, limits: Limits, logger: Logger, now: number): AsyncGenerator<RetainedMessage> {
  const removed = { malformed: 0, expired: 0, too_large: 0, over_limit: 0 }
  let kept = 0
  for await (const [topic, text] of store.entries()) {
    const message = decode(topic, text)
    let why: keyof typeof removed | undefined
    if (typeof message === 'string') {
      why = 'malformed'
      if (removed.malformed < LOGGED_ONE_BY_ONE) logger.warn({ topic, why: message }, 'a stored retained message is malformed: skipped and removed')
    } else if (message.expiresAt !== undefined && message.expiresAt <= now) why = 'expired'
    else if (limits.maxPayload > 0 && message.payload.length > limits.maxPayload) why = 'too_large'
    else if (limits.maxCount > 0 && kept >= limits.maxCount) why = 'over_limit'
    if (why !== undefined) {
      removed[why]++
      await store.del(topic)
      continue
    }
    kept++
    yield message as RetainedMessage
  }
  if (Object.values(removed).some((n) => n > 0)) {
    logger.warn({ kept, ...removed }, 'stored retained messages read back: some removed (malformed, expired, over retainer.max_payload_size, beyond retainer.max_retained_messages)')
  }
}

/** Runs `work` on every item, `width` at a time. */
export async function inBatches<T> (items: Iterable<T>, width: number, work: (item: T) => Promise<unknown>): Promise<void> {
  let batch: Array<Promise<unknown>> = []
  for (const item of items) {
    batch.push(work(item))
    if (batch.length >= width) {
      await Promise.all(batch)
      batch = []
    }
  }
  await Promise.all(batch)
}
