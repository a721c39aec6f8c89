// How much CPU the machine's other processes took while a run was measured.
// The figures of a run are ratios between servers measured one after the
// other, so a neighbour that takes a core during one server's run and not
// during another's moves the ratio: such a run is refused (or retried).
//
// other = (busy time of all CPUs, /proc/stat) − (CPU of the runner and every
// process it started, /proc/<pid>/stat), per wall second, in cores. A child
// that exits inside the window has its time moved into its parent's cutime
// and cstime when it is reaped, so the tree's sum stays continuous.
import { readdirSync, readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { envNumber } from './env.js'

/** Clock ticks per second of /proc's CPU times (USER_HZ; 100 on every Linux Node.js supports). */
const TICKS_PER_SECOND = 100

/** Busy ticks of all CPUs: user, nice, system, irq, softirq, steal (not idle, not iowait). */
function machineBusyTicks (): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]
  const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number)
  return user + nice + system + irq + softirq + (steal ?? 0)
}

interface ProcStat { ppid: number, ticks: number }

/** ppid and utime + stime + cutime + cstime of a process, or null when it is gone. */
function procStat (pid: number): ProcStat | null {
  let text: string
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return null
  }
  // the command name is in parentheses and may hold spaces: the fields start after the last ')'
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
  return { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]) }
}

/** CPU ticks of `root` and of every live descendant (with what their reaped children used). */
function treeTicks (root: number): number {
  const stats = new Map<number, ProcStat>()
  for (const name of readdirSync('/proc')) {
    const pid = Number(name)
    if (!Number.isInteger(pid)) continue
    const stat = procStat(pid)
    if (stat !== null) stats.set(pid, stat)
  }
  const children = new Map<number, number[]>()
  for (const [pid, stat] of stats) {
    const list = children.get(stat.ppid)
    if (list === undefined) children.set(stat.ppid, [pid])
    else list.push(pid)
  }
  let total = 0
  const pending = [root]
  while (pending.length > 0) {
    const pid = pending.pop()!
    total += stats.get(pid)?.ticks ?? 0
    pending.push(...(children.get(pid) ?? []))
  }
  return total
}

export interface Disturbance {
  /** the other processes' CPU, in cores, averaged over the window */
  otherCores: number
  /** the runner's and its children's CPU, in cores */
  ownCores: number
  seconds: number
}

/** Starts watching; the returned function ends the window and gives its figures. */
export function watchDisturbance (): () => Disturbance {
  const startedAt = performance.now()
  const busy0 = machineBusyTicks()
  const own0 = treeTicks(process.pid)
  return () => {
    const seconds = (performance.now() - startedAt) / 1000
    const busy = machineBusyTicks() - busy0
    const own = treeTicks(process.pid) - own0
    const perSecond = Math.max(seconds, 0.001) * TICKS_PER_SECOND
    return { otherCores: Math.max(0, busy - own) / perSecond, ownCores: own / perSecond, seconds }
  }
}

/** The other processes' CPU over `ms` before anything runs, for the report's header. */
export async function sampleDisturbance (ms: number): Promise<Disturbance> {
  const stop = watchDisturbance()
  await new Promise((resolve) => setTimeout(resolve, ms))
  return stop()
}

export interface DisturbancePolicy {
  /** most cores the other processes may use on average during a run (BENCH_MAX_OTHER_CPU, default 0.25) */
  maxOtherCores: number
  /** runs of a scenario on a server retried when disturbed (BENCH_RETRIES, default 2) */
  retries: number
  /** report disturbed runs anyway, marked (BENCH_ALLOW_DISTURBED=1) */
  allow: boolean
  cores: number
}

export function disturbancePolicy (env: NodeJS.ProcessEnv = process.env): DisturbancePolicy {
  return {
    maxOtherCores: envNumber('BENCH_MAX_OTHER_CPU', 0.25, { zero: true }, env),
    retries: envNumber('BENCH_RETRIES', 2, { zero: true, integer: true }, env),
    allow: env.BENCH_ALLOW_DISTURBED === '1',
    cores: availableParallelism()
  }
}

export const describeDisturbance = (d: Disturbance): string =>
  `other processes used ${d.otherCores.toFixed(2)} cores on average over ${d.seconds.toFixed(1)} s`
