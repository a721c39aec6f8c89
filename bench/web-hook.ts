// The `web-hook` section: what broker_web_hook posting every message.publish
// costs the publisher path. Two loads (QoS 1: the 10 closed-loop pairs of
// `qos1-pairs`; QoS 0: the 10 publishers → 1 subscriber of `fan-in`), each
// run on three fresh broker nodes in turn: without the plugin, with it posting
// to a live local endpoint (bench/hook-endpoint.ts, its own process), and with
// it pointed at a port where nothing listens (the queue fills, events are
// dropped and counted); the three in turn, `rounds` times, each setup's
// median kept. See bench/README.md.
import { Worker } from './pool.js'
import type { Role } from './protocol.js'
import { envChoice, envNumber } from './env.js'
import { range, receivedPerSecond, timedOn, type LoadWindow } from './scenarios.js'
import { cpuMs, cpuProfile, freePort, Server, threadCpuMs, threadUsPer } from './servers.js'

export const WEB_HOOK_SECTION = 'web-hook'

export type HookLoad = 'qos1' | 'qos0'
export type HookSetup = 'off' | 'live' | 'batch' | 'down'

export const HOOK_LOADS: Array<{ key: HookLoad, title: string, roles: Role[] }> = [
  { key: 'qos1', title: 'QoS 1, 10 closed-loop pairs', roles: [{ kind: 'qos1-pairs', pairs: range(0, 5) }, { kind: 'qos1-pairs', pairs: range(5, 10) }] },
  {
    key: 'qos0',
    title: 'QoS 0, 10 publishers -> 1 subscriber',
    roles: [{ kind: 'fan-in', subscriber: true, publishers: range(0, 5) }, { kind: 'fan-in', subscriber: false, publishers: range(5, 10) }]
  }
]

export const HOOK_SETUPS: Array<{ key: HookSetup, title: string }> = [
  { key: 'off', title: 'no web hook' },
  { key: 'live', title: 'web hook, live endpoint' },
  { key: 'batch', title: 'web hook, live, batch_size 100, batch_time 50ms' },
  { key: 'down', title: 'web hook, endpoint down' }
]

export interface HookRun {
  /** messages received by the subscribers per second, after the warm-up */
  'msg/s': number
  /** the node process's CPU time (all its threads) per message, µs: its CPU over the measured window / messages received there */
  'cpu us/msg': number
  /** the same for its main thread alone: the event loop that serves MQTT (the delivery thread is another) */
  'loop us/msg': number
  /** POSTs the live endpoint answered per second in the measured window (live only) */
  'posted/s'?: number
  /** the live endpoint process's CPU per POST it answered, µs (live only: the peer's share of the machine) */
  'endpoint us/post'?: number
  /** the same per message received: comparable with `cpu us/msg`, the part of the drop that is the endpoint's */
  'endpoint us/msg'?: number
  /** the client workers' CPU per message, µs: with the node's and the endpoint's, what the machine spends per message */
  'clients us/msg': number
  /** the plugin's webhook/dropped and webhook/failed at the end of the run */
  dropped?: number
  /** events dropped in the measured window per message received there: ~1 when the queue stayed full (down), 0 when live kept up */
  'dropped/msg'?: number
  failed?: number
}

type Ratios<T> = { live: T, batch: T, down: T }
/** Per load: each setup's median run, its ratio to `off`'s, and the ratio of each round's run to that round's `off` run (the spread). */
export type WebHookResults = Record<HookLoad, Record<HookSetup, HookRun | null> & { ratio: Ratios<number | null>, paired: Ratios<number[]> }>

const WEB_HOOK_PLUGIN = 'broker_web_hook'

/** One fresh value per setup. */
const perSetup = <T>(make: () => T): Record<HookSetup, T> => Object.fromEntries(HOOK_SETUPS.map(({ key }) => [key, make()])) as Record<HookSetup, T>

/** The opt-in batch mode the `batch` setup measures. */
const BATCH_SETTINGS = { 'web.hook.batch_size': '100', 'web.hook.batch_time': '50ms' }

function pluginSettings (url: string, batch: boolean): Record<string, Record<string, string>> {
  return { [WEB_HOOK_PLUGIN]: { 'web.hook.api.url': url, 'web.hook.rule.message.publish.1': '{"action": "on_message_publish"}', ...(batch ? BATCH_SETTINGS : {}) } }
}

/** POSTs the bench endpoint has answered so far. */
export async function endpointCount (endpoint: Server): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${endpoint.port}/count`)
  return ((await res.json()) as { count: number }).count
}

/**
 * Seconds of load before the measured ones, every setup alike (BENCH_HOOK_WARMUP): long enough for the
 * `down` node's queue (web.hook.queue_size, 10 000) to fill, so that its window measures the drop and not
 * the events that fill the queue (posted to the delivery thread like live ones), and for V8 to have
 * compiled the delivery thread's code: it runs per batch and per answer read, a few hundred times a second,
 * and `--trace-opt` showed it still being compiled 10 s into a run (bench/README.md, session 19).
 */
const WARMUP_S = envNumber('BENCH_HOOK_WARMUP', 10, { zero: true })
/** `BENCH_HOOK_THREADS=1`: each run also writes the node's CPU per message by thread to stderr */
const THREADS = envNumber('BENCH_HOOK_THREADS', 0, { zero: true }) > 0

interface Sample { cpu: number, loop: number, threads: Map<string, number>, clients: number, endpointCpu: number, posted: number, dropped: number }

async function metric (node: Server, name: string): Promise<number> {
  const metrics = await node.ctl(['broker', 'metrics']) as Record<string, number>
  return metrics[name] ?? 0
}

async function runOne (load: typeof HOOK_LOADS[number], setup: HookSetup, endpoint: Server, seconds: number): Promise<HookRun> {
  const live = setup === 'live' || setup === 'batch'
  const url = live ? `http://127.0.0.1:${endpoint.port}/hook` : `http://127.0.0.1:${await freePort()}/hook`
  const profile = cpuProfile(`web-hook-${load.key}-${setup}`, 'broker')
  const node = await Server.start('broker', { label: `broker (${setup})`, plugins: setup === 'off' ? {} : pluginSettings(url, setup === 'batch'), nodeArgs: profile?.nodeArgs })
  const workers = [new Worker(0), new Worker(1)]
  try {
    // every figure is read when the measured window opens (a timer while the load runs) and when it ends
    const read = async (): Promise<Sample> => ({
      cpu: cpuMs(node.pid),
      loop: cpuMs(node.pid, true),
      threads: THREADS ? threadCpuMs(node.pid) : new Map(),
      clients: workers.reduce((sum, w) => sum + cpuMs(w.pid), 0),
      endpointCpu: cpuMs(endpoint.pid),
      posted: live ? await endpointCount(endpoint) : 0,
      dropped: setup === 'off' ? 0 : await metric(node, 'webhook/dropped')
    })
    const atStart = new Promise<Sample>((resolve, reject) => setTimeout(() => { read().then(resolve, reject) }, WARMUP_S * 1000))
    atStart.catch(() => {})
    const window: LoadWindow = { fromNs: 0n, toNs: 0n }
    const results = await Promise.race([timedOn(workers, [node.port, node.port], load.roles, seconds, 0, window, WARMUP_S * 1000), node.died, endpoint.died])
    const end = await read()
    const start = await atStart
    profile?.writeWindow(window)
    const rate = receivedPerSecond(results)
    if (rate === 0) throw new Error('no message was received')
    const messages = rate * seconds
    const run: HookRun = { 'msg/s': rate, 'cpu us/msg': (end.cpu - start.cpu) * 1000 / messages, 'loop us/msg': (end.loop - start.loop) * 1000 / messages, 'clients us/msg': (end.clients - start.clients) * 1000 / messages }
    if (THREADS) {
      process.stderr.write(`  node threads, us/msg: ${threadUsPer(start.threads, end.threads, messages).map(([name, us]) => `${name} ${us.toFixed(1)}`).join(', ')}\n`)
    }
    if (setup === 'off') return run
    run.dropped = end.dropped
    run.failed = await metric(node, 'webhook/failed')
    run['dropped/msg'] = (end.dropped - start.dropped) / messages
    if (live) {
      const posted = end.posted - start.posted
      const endpointCpu = end.endpointCpu - start.endpointCpu
      run['posted/s'] = posted / seconds
      if (posted > 0) run['endpoint us/post'] = endpointCpu * 1000 / posted
      run['endpoint us/msg'] = endpointCpu * 1000 / messages
    }
    return run
  } catch (err) {
    // Clients notice a dead server before the runner sees it exit: blame the server, not them.
    await new Promise((resolve) => setTimeout(resolve, 200))
    throw node.deathError ?? endpoint.deathError ?? err
  } finally {
    await Promise.all(workers.map(async (w) => await w.close()))
    await node.stop()
  }
}

/** The median run by msg/s (the lower middle of an even count); null when none completed. */
function median (runs: HookRun[]): HookRun | null {
  if (runs.length === 0) return null
  const sorted = [...runs].sort((a, b) => a['msg/s'] - b['msg/s'])
  return sorted[Math.floor((sorted.length - 1) / 2)]
}

/**
 * Runs each load `rounds` times on the three setups in turn (off, live, down,
 * off, live, down …, so that a change in the machine's load hits all three),
 * keeping each setup's median run; progress on stderr, failures into `errors`.
 */
export async function runWebHookSection (seconds: number, rounds: number, errors: string[]): Promise<WebHookResults> {
  const results = Object.fromEntries(HOOK_LOADS.map(({ key }) => [key, { ...perSetup(() => null), ratio: { live: null, batch: null, down: null }, paired: { live: [] as number[], batch: [] as number[], down: [] as number[] } }])) as WebHookResults
  let endpoint: Server
  try {
    endpoint = await Server.startHookEndpoint()
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err)
    errors.push(`${WEB_HOOK_SECTION}: the endpoint: ${message}`)
    return results
  }
  const loads = envChoice('BENCH_HOOK_LOADS', HOOK_LOADS.map(({ key }) => key))
  const setups = HOOK_SETUPS.filter(({ key }) => key === 'off' || envChoice('BENCH_HOOK_SETUPS', HOOK_SETUPS.map((s) => s.key)).includes(key))
  try {
    for (const load of HOOK_LOADS.filter(({ key }) => loads.includes(key))) {
      const runs = perSetup((): HookRun[] => [])
      const paired = results[load.key].paired
      for (let round = 1; round <= rounds; round++) {
        let offRate: number | undefined
        for (const { key, title } of setups) {
          process.stderr.write(`${WEB_HOOK_SECTION} ${load.key}, ${title}, round ${round}/${rounds} ... `)
          try {
            const run = await runOne(load, key, endpoint, seconds)
            runs[key].push(run)
            if (key === 'off') offRate = run['msg/s']
            else if (offRate !== undefined) paired[key].push(run['msg/s'] / offRate)
            const extra = run.dropped === undefined ? '' : `, ${run['posted/s'] === undefined ? '' : `${run['posted/s'].toFixed(0)} posted/s, ${run['endpoint us/post']?.toFixed(1) ?? '-'} endpoint us/post, ${run['endpoint us/msg']?.toFixed(1) ?? '-'} endpoint us/msg, `}${run.dropped} dropped (${run['dropped/msg']?.toFixed(2) ?? '-'}/msg in the window), ${run.failed ?? 0} failed`
            process.stderr.write(`${run['msg/s'].toFixed(0)} msg/s, ${run['cpu us/msg'].toFixed(1)} cpu us/msg, ${run['loop us/msg'].toFixed(1)} loop us/msg, ${run['clients us/msg'].toFixed(1)} clients us/msg${extra}\n`)
          } catch (err) {
            const message = err instanceof Error ? err.message : String(err)
            process.stderr.write(`failed: ${message}\n`)
            errors.push(`${WEB_HOOK_SECTION} ${load.key}, ${title}, round ${round}: ${message}`)
          }
        }
      }
      for (const { key } of HOOK_SETUPS) results[load.key][key] = median(runs[key])
      const off = results[load.key].off?.['msg/s']
      const ratio = (setup: HookSetup): number | null => {
        const value = results[load.key][setup]?.['msg/s']
        return value === undefined || off === undefined || off === 0 ? null : value / off
      }
      results[load.key].ratio = { live: ratio('live'), batch: ratio('batch'), down: ratio('down') }
    }
  } finally {
    await endpoint.stop()
  }
  return results
}
