// What the node says about itself: broker info (SPEC §2.7, §2.9) and node
// statistics (§2.8), in EMQ X's words with Node.js meanings:
// - otp_release: the runtime, `Node.js v20.20.2` (EMQ X gives its Erlang/OTP release);
// - max_fds: the soft limit on open file descriptors (`/proc/self/limits`);
// - process_available / process_used: EMQ X's Erlang process limit and count.
//   Node.js has no such processes; each connection holds one file descriptor,
//   so these are the file-descriptor limit and the descriptors open now
//   (`/proc/self/fd`). Off Linux both read 0.
// - memory_total: memory the process holds (resident set size);
//   memory_used: the part in use by JavaScript (heap used + external memory).
// - load1/5/15: `os.loadavg()` with two decimals, as strings.
import { readFileSync } from 'node:fs'
import { readdir, readFile } from 'node:fs/promises'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { INSTALL_ROOT } from '../root.js'
import { specTime } from '../timestamps.js'

export const VERSION: string = (JSON.parse(readFileSync(join(INSTALL_ROOT, 'package.json'), 'utf8')) as { version: string }).version
export const SYSDESCR = 'MQTT Broker'
export const OTP_RELEASE = `Node.js ${process.version}`

export interface BrokerInfo {
  datetime: string
  node_status: 'Running'
  otp_release: string
  sysdescr: string
  uptime: string
  version: string
}

export interface NodeStats {
  connections: number
  max_fds: number
  process_available: number
  process_used: number
  load1: string
  load5: string
  load15: string
  /** bytes; the API's list form writes `<n>M` (see megabytes) */
  memory_total: number
  memory_used: number
  name: string
  node_status: 'Running'
  otp_release: string
  uptime: string
  version: string
}


/**
 * EMQ X's uptime text: `5 seconds`, `2 minutes, 5 seconds`,
 * `1 hours, 0 minutes, 5 seconds`, `3 days, 1 hours, 0 minutes, 5 seconds`
 * (EMQ X wrote `3 days,1 hours`; the space is restored).
 */
export function uptimeText (ms: number): string {
  let seconds = Math.floor(ms / 1000)
  const days = Math.floor(seconds / 86400)
  seconds -= days * 86400
  const hours = Math.floor(seconds / 3600)
  seconds -= hours * 3600
  const minutes = Math.floor(seconds / 60)
  seconds -= minutes * 60
  const parts: string[] = []
  if (days > 0) parts.push(`${days} days`)
  if (days > 0 || hours > 0) parts.push(`${hours} hours`)
  if (days > 0 || hours > 0 || minutes > 0) parts.push(`${minutes} minutes`)
  parts.push(`${seconds} seconds`)
  return parts.join(', ')
}

/** `123M`: the list form of memory_total / memory_used (SPEC §2.8). */
export function megabytes (bytes: number): string {
  return `${Math.round(bytes / 1048576)}M`
}

/** File descriptors open in this process; 0 where /proc is absent. */
export async function openFds (): Promise<number> {
  try {
    // the listing includes the descriptor used to read it
    return Math.max(0, (await readdir('/proc/self/fd')).length - 1)
  } catch {
    return 0
  }
}

/** The soft limit on open file descriptors; 0 where /proc is absent. */
export async function maxFds (): Promise<number> {
  try {
    const limits = await readFile('/proc/self/limits', 'utf8')
    const soft = /^Max open files\s+(\S+)/m.exec(limits)?.[1]
    return soft === undefined || soft === 'unlimited' ? 0 : Number(soft)
  } catch {
    return 0
  }
}

export function brokerInfo (startedAt: number): BrokerInfo {
  return {
    datetime: specTime(),
    node_status: 'Running',
    otp_release: OTP_RELEASE,
    sysdescr: SYSDESCR,
    uptime: uptimeText(Date.now() - startedAt),
    version: VERSION
  }
}

export async function nodeStats (name: string, startedAt: number, connections: number): Promise<NodeStats> {
  const [max, used] = await Promise.all([maxFds(), openFds()])
  const memory = process.memoryUsage()
  const [load1, load5, load15] = loadavg().map((load) => load.toFixed(2))
  return {
    connections,
    max_fds: max,
    process_available: max,
    process_used: used,
    load1,
    load5,
    load15,
    memory_total: memory.rss,
    memory_used: memory.heapUsed + memory.external,
    name,
    node_status: 'Running',
    otp_release: OTP_RELEASE,
    uptime: uptimeText(Date.now() - startedAt),
    version: VERSION
  }
}
