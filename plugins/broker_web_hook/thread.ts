// The delivery thread: posts the events the node hands it over an undici Pool
// of `poolSize` keep-alive connections (TLS with the web.hook.ssl.* files).
// One FIFO lane per connection, the lane chosen by the client id the event is
// about, so one client's events are posted in order; each lane posts its
// events one after the other. A 5xx answer or no answer is retried after a
// growing pause, at most `retryTimes` times; then the event is given up.
// Each settled event is taken off the shared count (`shared`: events and
// bytes waiting or under way, which the node checks before it hands one
// over), and the outcomes go back to the node in batches.
//
// `deliveryThread` runs on a worker thread of its own, so writing requests and
// reading answers never takes the event loop that serves MQTT. It is started
// there from its source text (Function.prototype.toString, see delivery.ts):
// it must be self-contained, reaching nothing outside its parameters (type
// imports are erased and fine).
import type { Dispatcher, Pool } from 'undici'

/** What the node sends the thread. */
export type ToThread =
  /** events to post: the same index in each array is one event */
  | { type: 'events', keys: string[], sizes: number[], bodies: string[] }

/** What the thread tells the node. */
export type FromThread =
  /** events settled since the last report: posted (2xx), given up; `why` of the first given up */
  | { type: 'settled', sent: number, failed: number, why?: string }
  /** an attempt got no answer: the endpoint is unavailable (sent once per outage) */
  | { type: 'down', error: string }
  /** an attempt started during the outage got an answer */
  | { type: 'up' }

export interface ThreadSettings {
  url: string
  headers: Record<string, string>
  tls: { ca?: string, cert?: string, key?: string, verify: boolean }
  poolSize: number
  /** ms per attempt: connecting, sending, the whole answer */
  timeout: number
  retryTimes: number
  retryInterval: number
  retryBackoff: number
  /** [0] events waiting or under way, [1] their bytes; the thread takes each settled event off */
  shared: Int32Array
}

/** The two ends a thread talks through: a worker's parentPort, or one end of a MessageChannel. */
export interface ThreadPort {
  on: (event: 'message', listener: (message: ToThread) => void) => unknown
  postMessage: (message: FromThread) => void
}

/** Runs the delivery on `port`; answers a function that stops it (requests under way end, waiting events are forgotten). */
export function deliveryThread (port: ThreadPort, settings: ThreadSettings, undici: { Pool: typeof Pool }): () => Promise<void> {
  interface Item { size: number, body: string }
  interface Lane { items: Item[], head: number, busy: boolean }
  const url = new URL(settings.url)
  const path = `${url.pathname}${url.search}`
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  for (const [name, value] of Object.entries(settings.headers)) headers[name.toLowerCase()] = value
  const { ca, cert, key, verify } = settings.tls
  const pool = new undici.Pool(url.origin, {
    connections: settings.poolSize,
    pipelining: 1,
    headersTimeout: settings.timeout,
    bodyTimeout: settings.timeout,
    connect: { timeout: settings.timeout, ca, cert, key, rejectUnauthorized: verify }
  })
  const lanes: Lane[] = Array.from({ length: settings.poolSize }, () => ({ items: [], head: 0, busy: false }))
  const shared = settings.shared
  const state = { stopped: false, started: 0, outageSince: -1, sent: 0, failed: 0, why: undefined as string | undefined, report: undefined as NodeJS.Timeout | undefined }
  const pauses = new Set<{ timer: NodeJS.Timeout, wake: () => void }>()

  // FNV-1a over the UTF-16 code units: a cheap, stable spread of client ids over the lanes
  const laneOf = (id: string): Lane => {
    let hash = 0x811c9dc5
    for (let i = 0; i < id.length; i++) hash = Math.imul(hash ^ id.charCodeAt(i), 0x01000193)
    return lanes[(hash >>> 0) % lanes.length]
  }

  const report = (): void => {
    state.report = undefined
    if (state.stopped || (state.sent === 0 && state.failed === 0)) return
    port.postMessage({ type: 'settled', sent: state.sent, failed: state.failed, why: state.why })
    state.sent = 0
    state.failed = 0
    state.why = undefined
  }
  const settle = (item: Item, ok: boolean, why?: string): void => {
    Atomics.sub(shared, 0, 1)
    Atomics.sub(shared, 1, item.size)
    if (ok) state.sent++
    else {
      state.failed++
      state.why ??= why
    }
    // outcomes go back in batches: each message wakes the node's thread
    state.report ??= setTimeout(report, 20)
  }

  /** One POST; the answer's status, or an Error when there is none. */
  const attempt = async (body: string): Promise<number | Error> => await new Promise((resolve) => {
    let status = 0
    const handler: Dispatcher.DispatchHandler = {
      // undici takes a handler of this (v7) form only when it has onRequestStart
      onRequestStart: () => {},
      onResponseStart: (_controller, code) => { status = code },
      onResponseEnd: () => resolve(status),
      onResponseError: (_controller, error) => resolve(error)
    }
    try {
      pool.dispatch({ path, method: 'POST', headers, body }, handler)
    } catch (err) {
      resolve(err instanceof Error ? err : new Error(String(err)))
    }
  })

  /** Waits `ms` unless the thread stops first; false when it stopped. */
  const pause = async (ms: number): Promise<boolean> => await new Promise((resolve) => {
    const entry = { timer: setTimeout(() => { pauses.delete(entry); resolve(true) }, ms), wake: () => resolve(false) }
    pauses.add(entry)
  })

  const post = async (item: Item): Promise<void> => {
    let wait = settings.retryInterval
    for (let tries = 0; ; tries++) {
      const seq = ++state.started
      const answer = await attempt(item.body)
      if (state.stopped) return
      if (answer instanceof Error) {
        if (state.outageSince < 0) {
          state.outageSince = seq
          port.postMessage({ type: 'down', error: answer.message })
        }
      } else if (state.outageSince >= 0 && seq > state.outageSince) {
        state.outageSince = -1
        port.postMessage({ type: 'up' })
      }
      if (typeof answer === 'number' && answer >= 200 && answer < 300) return settle(item, true)
      const retryable = answer instanceof Error || answer >= 500
      if (!retryable || tries >= settings.retryTimes) {
        const why = answer instanceof Error ? `no answer: ${answer.message}` : `answer ${answer}`
        return settle(item, false, `${why} (${tries + 1} attempt${tries === 0 ? '' : 's'})`)
      }
      if (!await pause(wait)) return
      wait *= settings.retryBackoff
    }
  }

  const work = async (lane: Lane): Promise<void> => {
    while (!state.stopped && lane.head < lane.items.length) {
      const item = lane.items[lane.head]
      lane.items[lane.head++] = undefined as unknown as Item
      // drop the consumed front once it is most of the array
      if (lane.head >= 1024 && lane.head * 2 >= lane.items.length) {
        lane.items = lane.items.slice(lane.head)
        lane.head = 0
      }
      await post(item)
    }
    lane.busy = false
  }

  port.on('message', (message) => {
    if (state.stopped || message.type !== 'events') return
    const { keys, sizes, bodies } = message
    for (let i = 0; i < keys.length; i++) {
      const lane = laneOf(keys[i])
      lane.items.push({ size: sizes[i], body: bodies[i] })
      if (!lane.busy) {
        lane.busy = true
        void work(lane)
      }
    }
  })

  return async () => {
    state.stopped = true
    clearTimeout(state.report)
    for (const entry of pauses) {
      clearTimeout(entry.timer)
      entry.wake()
    }
    pauses.clear()
    for (const lane of lanes) lane.items = []
    await pool.destroy()
  }
}
