// CPU accounting of broker_web_hook, in-process and without MQTT clients, so
// that a loaded machine inflates its figures but does not bury them: the real
// `message.publish` handler and Delivery (worker thread) are fed synthetic
// messages at a fixed pace (chunks every few ms, as a node reading sockets
// would), and the CPU the main thread and the whole process used is read from /proc. Cases, in turn,
// `rounds` times, each case's median kept:
//   feed   no handler: the feeding loop's own cost, taken off the others
//   live   every event posted to bench/hook-endpoint.ts (its own process)
//   batch  the same with web.hook.batch_size = WEB_HOOK_BATCH (default 100),
//          web.hook.batch_time = WEB_HOOK_BATCH_TIME ms (default 50)
//   down   the endpoint's port closed and the queue full: every event dropped
// Figures: main-thread µs per event (the publisher path's share), other
// threads' µs per event (the delivery thread, GC helpers), the endpoint's µs
// per POST. Run: node dist/bench/web-hook-cost.js [events] [rounds]
// (`--cpu-prof` profiles the main thread; WEB_HOOK_INLINE=1 runs the
// delivery on the main thread too, to profile it).
import type { ClientInfo, MessageInfo } from '../lib/plugin-kit/index.js'
import { Delivery } from '../plugins/broker_web_hook/delivery.js'
import { eventHandlers } from '../plugins/broker_web_hook/events.js'
import { eventsOf } from '../plugins/broker_web_hook/rules.js'
import { DEFAULTS } from '../plugins/broker_web_hook/settings.js'
import { envChoice, envNumber } from './env.js'
import { cpuMs, freePort, killAllNow, Server, threadCpuMs, threadUsPer } from './servers.js'
import { endpointCount } from './web-hook.js'

const CASES = ['feed', 'live', 'batch', 'down'] as const
type Case = typeof CASES[number]
interface Figures { mainUs: number, otherUs: number, threads: string, endpointUs?: number, endpointUsPerEvent?: number, sent: number, dropped: number }

/** events fed per chunk and ms between chunks (WEB_HOOK_CHUNK, WEB_HOOK_CHUNK_MS): 20 per 4 ms is 5 000/s; the bench's QoS 0 load is ~750 per 5 ms */
const CHUNK = envNumber('WEB_HOOK_CHUNK', 20, { integer: true })
const CHUNK_MS = envNumber('WEB_HOOK_CHUNK_MS', 4)
/** a device's reading as JSON text (its quotes are escaped in the body) */
const PAYLOAD = Buffer.from('{"t":21.5,"u":"C"}')

function processCpuMs (): number {
  const usage = process.cpuUsage()
  return (usage.user + usage.system) / 1000
}

/** The ten publishers' connections (a node keeps one ClientInfo per connection). */
const publishers = Array.from({ length: 10 }, (_, n) => ({ clientId: `bench-pub-${n}`, username: undefined, ipAddress: '127.0.0.1', protoVer: 4, mountpoint: '', zone: 'external' }) as unknown as ClientInfo)

/** A message as `message.accepted` sees it, with its publisher. */
const message = (n: number): [MessageInfo, ClientInfo] => [
  { topic: `bench/in/${n % 10}`, payload: PAYLOAD, qos: 1, retain: false, from: `bench-pub-${n % 10}` },
  publishers[n % 10]
]

async function runCase (kind: Case, events: number, endpoint: Server): Promise<Figures> {
  const counts = { sent: 0, failed: 0, dropped: 0 }
  const counter = (name: keyof typeof counts): { inc: (by?: number) => void } => ({ inc: (by = 1) => { counts[name] += by } })
  const quiet = { info () {}, warn () {}, error () {}, debug () {}, trace () {}, fatal () {}, child () { return quiet } }
  const live = kind === 'live' || kind === 'batch'
  const url = live ? `http://127.0.0.1:${endpoint.port}/hook` : `http://127.0.0.1:${await freePort()}/hook`
  const delivery = kind === 'feed'
    ? undefined
    : new Delivery({
      url,
      headers: {},
      tls: { verify: true },
      poolSize: DEFAULTS['web.hook.pool_size'],
      pipelining: DEFAULTS['web.hook.request.pipelining'],
      batchSize: kind === 'batch' ? envNumber('WEB_HOOK_BATCH', 100, { integer: true }) : DEFAULTS['web.hook.batch_size'],
      batchTime: kind === 'batch' ? envNumber('WEB_HOOK_BATCH_TIME', 50) : DEFAULTS['web.hook.batch_time'],
      queueSize: DEFAULTS['web.hook.queue_size'],
      queueBytes: DEFAULTS['web.hook.queue_bytes'],
      timeout: DEFAULTS['web.hook.request.timeout'],
      retryTimes: DEFAULTS['web.hook.request.retry_times'],
      retryInterval: DEFAULTS['web.hook.request.retry_interval'],
      retryBackoff: DEFAULTS['web.hook.request.retry_backoff'],
      counters: { sent: counter('sent'), failed: counter('failed'), dropped: counter('dropped') },
      alarms: { raise () {}, clear () {} } as never,
      logger: quiet as never,
      plugin: 'broker_web_hook',
      thread: process.env.WEB_HOOK_INLINE === '1' ? 'inline' : 'worker'
    })
  const handlers = delivery === undefined
    ? undefined
    : eventHandlers({
      node: 'bench@127.0.0.1',
      encoding: 'none',
      offer: (item) => delivery.offer(item),
      publish: (size, message, username, publisher) => delivery.publish(size, message, username, publisher),
      room: () => delivery.room,
      drop: () => delivery.drop(),
      count: () => {},
      connection: () => undefined,
      username: () => undefined
    }, eventsOf([{ event: 'message.publish', action: 'on_message_publish' }]))
  const accepted = handlers?.['message.accepted'] ?? (() => undefined)
  const publish = ([m, client]: [MessageInfo, ClientInfo]): void => accepted(m, client)
  const messages = Array.from({ length: 1000 }, (_, n) => message(n))
  try {
    if (kind === 'down') {
      // fill the queue first: what is measured is the drop
      for (let n = 0; delivery?.room === true; n++) publish(messages[n % 1000])
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    const posted = live ? await endpointCount(endpoint) : 0
    const endpointBefore = cpuMs(endpoint.pid)
    const mainBefore = cpuMs(process.pid, true)
    const allBefore = processCpuMs()
    const threadsBefore = threadCpuMs(process.pid)
    const droppedBefore = counts.dropped
    await new Promise<void>((resolve) => {
      let n = 0
      const tick = (): void => {
        for (let i = 0; i < CHUNK && n < events; i++, n++) publish(messages[n % 1000])
        if (n < events) setTimeout(tick, CHUNK_MS)
        else resolve()
      }
      tick()
    })
    if (live) {
      const deadline = Date.now() + 120_000
      while (counts.sent + counts.failed < events && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
    }
    const main = cpuMs(process.pid, true) - mainBefore
    const all = processCpuMs() - allBefore
    // the other threads by name and id, the busiest first: the delivery thread (a worker), then V8's GC helpers
    const threads = threadUsPer(threadsBefore, threadCpuMs(process.pid), events)
      .filter(([name, us]) => !name.endsWith('(main)') && us >= 0.05).map(([name, us]) => `${name} ${us.toFixed(2)}`).join(', ')
    const figures: Figures = { mainUs: main * 1000 / events, otherUs: (all - main) * 1000 / events, threads, sent: counts.sent, dropped: counts.dropped - droppedBefore }
    if (live) {
      const endpointMs = cpuMs(endpoint.pid) - endpointBefore
      figures.endpointUs = endpointMs * 1000 / Math.max(1, await endpointCount(endpoint) - posted)
      figures.endpointUsPerEvent = endpointMs * 1000 / events
    }
    return figures
  } finally {
    await delivery?.close()
  }
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)]

async function main (): Promise<void> {
  const events = Number(process.argv[2] ?? 40_000)
  const rounds = Number(process.argv[3] ?? 3)
  const only = envChoice('WEB_HOOK_CASES', CASES)
  const endpoint = await Server.startHookEndpoint()
  const runs: Record<Case, Figures[]> = { feed: [], live: [], batch: [], down: [] }
  try {
    for (let round = 1; round <= rounds; round++) {
      for (const kind of only) {
        const figures = await runCase(kind, events, endpoint)
        runs[kind].push(figures)
        process.stderr.write(`${kind} round ${round}: main ${figures.mainUs.toFixed(2)} us/event, other threads ${figures.otherUs.toFixed(2)} us/event (${figures.threads})${figures.endpointUs === undefined ? '' : `, endpoint ${figures.endpointUs.toFixed(2)} us/post ${figures.endpointUsPerEvent?.toFixed(2) ?? '-'} us/event`}, sent ${figures.sent}, dropped ${figures.dropped}\n`)
      }
    }
  } finally {
    await endpoint.stop()
  }
  const feed = runs.feed.length > 0 ? median(runs.feed.map((f) => f.mainUs)) : 0
  process.stdout.write(`web-hook-cost: ${events} message.publish events per run, ${CHUNK} every ${CHUNK_MS} ms, median of ${rounds}; main thread less the feed loop's ${feed.toFixed(2)} us/event\n`)
  process.stdout.write('case   main us/event (= ms per 1000 events)   other threads us/event   endpoint us/post   endpoint us/event\n')
  for (const kind of only) {
    if (kind === 'feed' || runs[kind].length === 0) continue
    const mainUs = median(runs[kind].map((f) => f.mainUs)) - feed
    const other = median(runs[kind].map((f) => f.otherUs))
    const endpointFigure = (pick: (f: Figures) => number | undefined): string => kind === 'down' ? '-' : median(runs[kind].map((f) => pick(f) ?? 0)).toFixed(1)
    process.stdout.write(`${kind.padEnd(6)} ${mainUs.toFixed(2).padStart(38)} ${other.toFixed(2).padStart(24)} ${endpointFigure((f) => f.endpointUs).padStart(18)} ${endpointFigure((f) => f.endpointUsPerEvent).padStart(19)}\n`)
  }
}

main().catch((err) => {
  killAllNow()
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`)
  process.exit(1)
})
