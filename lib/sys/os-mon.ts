// The alarms the node raises itself (EMQ X os_mon names), each on its own
// timer (period from etc/broker.conf, read live) and all at once by
// `check()`. Thresholds are read at every check, so a threshold changed at
// run time applies at the next one.
// - cpu_high_watermark: system CPU use (all cores: 1 − idle/total of the
//   `os.cpus()` times since the previous check) above
//   os_mon.cpu_high_watermark; cleared below os_mon.cpu_low_watermark.
// - system_memory_high_watermark: (total − available) / total above
//   os_mon.sysmem_high_watermark (`os.freemem()` is MemAvailable on Linux).
// - process_memory_high_watermark: this process's resident memory / total
//   above os_mon.procmem_high_watermark.
// - fd_high_watermark: open descriptors / soft limit above alarm.fd_high_watermark.
// - connections_high_watermark: any listener's connections / its
//   max_connections above alarm.connections_high_watermark.
// Memory, descriptor and connection alarms clear once back under the mark.
import { cpus, freemem, totalmem } from 'node:os'
import type { Config } from '../config/store.js'
import type { Listener } from '../listeners/index.js'
import type { Alarms } from './alarms.js'
import { LiveTimer } from './live-timer.js'
import { maxFds, openFds } from './node-info.js'

interface CpuSample { idle: number, total: number }

function cpuSample (): CpuSample {
  let idle = 0
  let total = 0
  for (const { times } of cpus()) {
    idle += times.idle
    total += times.user + times.nice + times.sys + times.idle + times.irq
  }
  return { idle, total }
}

const pct = (n: number): string => `${Math.round(n * 10) / 10}%`

export class OsMon {
  #cpu = cpuSample()
  readonly #timers: LiveTimer[]

  constructor (private readonly config: Config, private readonly alarms: Alarms, private readonly listeners: () => readonly Listener[]) {
    this.#timers = [
      new LiveTimer(config, 'os_mon.cpu_check_interval', () => this.checkCpu()),
      new LiveTimer(config, 'os_mon.mem_check_interval', () => this.checkMemory()),
      new LiveTimer(config, 'alarm.check_interval', () => { void this.checkFds(); this.checkConnections() })
    ]
  }

  start (): void {
    for (const timer of this.#timers) timer.start()
  }

  stop (): void {
    for (const timer of this.#timers) timer.stop()
  }

  /** Runs every check now. */
  async check (): Promise<void> {
    this.checkCpu()
    this.checkMemory()
    await this.checkFds()
    this.checkConnections()
  }

  /** CPU use since the previous check, in percent; undefined when no time has passed. */
  checkCpu (): number | undefined {
    const now = cpuSample()
    const total = now.total - this.#cpu.total
    const idle = now.idle - this.#cpu.idle
    if (total <= 0) return undefined
    this.#cpu = now
    const use = 100 * (1 - idle / total)
    const high = this.config.get('os_mon.cpu_high_watermark')
    const low = this.config.get('os_mon.cpu_low_watermark')
    if (use > high) {
      this.alarms.raise({ id: 'cpu_high_watermark', severity: 'warning', title: 'CPU use high', summary: `system CPU use ${pct(use)} is above ${pct(high)}` })
    } else if (use <= low) {
      this.alarms.clear('cpu_high_watermark')
    }
    return use
  }

  checkMemory (): void {
    const total = totalmem()
    this.#mark('system_memory_high_watermark', 100 * (total - freemem()) / total, this.config.get('os_mon.sysmem_high_watermark'),
      'warning', 'System memory high', 'memory in use on the machine')
    this.#mark('process_memory_high_watermark', 100 * process.memoryUsage.rss() / total, this.config.get('os_mon.procmem_high_watermark'),
      'warning', 'Process memory high', 'the broker\'s resident memory, as a share of the machine\'s,')
  }

  async checkFds (): Promise<void> {
    const [open, max] = await Promise.all([openFds(), maxFds()])
    if (max === 0) return
    this.#mark('fd_high_watermark', 100 * open / max, this.config.get('alarm.fd_high_watermark'),
      'critical', 'File descriptors near the limit', `open file descriptors (${open} of ${max})`)
  }

  checkConnections (): void {
    let worst = 0
    let which = ''
    for (const listener of this.listeners()) {
      const { current } = listener.gate.counters
      const use = 100 * current / listener.gate.maxConnections
      if (use > worst) {
        worst = use
        which = `${listener.protocol} ${listener.address.host}:${listener.address.port} (${current} of ${listener.gate.maxConnections})`
      }
    }
    this.#mark('connections_high_watermark', worst, this.config.get('alarm.connections_high_watermark'),
      'warning', 'Connections near the limit', `connections on listener ${which}`)
  }

  #mark (id: string, use: number, high: number, severity: 'warning' | 'critical', title: string, what: string): void {
    if (use > high) this.alarms.raise({ id, severity, title, summary: `${what} ${pct(use)} is above ${pct(high)}` })
    else this.alarms.clear(id)
  }
}
