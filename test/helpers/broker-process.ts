// A real `bin/broker` process started from a configuration FILE (-c), so a
// test can change the file and send SIGHUP (spawnBroker's --set values would
// win over any file). Its log lines are kept and can be awaited.
import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { INSTALL_ROOT } from '../../lib/root.js'

export interface ConfProcess {
  child: ChildProcess
  /** every line printed (stdout: JSON log lines; stderr) */
  lines: string[]
  /** stderr alone */
  stderr: string[]
  /** Resolves with the exit code (or the signal name). */
  exited: Promise<number | string>
  /** Resolves with the first line from index `from` on that includes `text`; rejects if the process exits first or after `timeoutMs`. */
  line: (text: string, from?: number, timeoutMs?: number) => Promise<string>
}

export function spawnWithConf (args: string[]): ConfProcess {
  const child = spawn(process.execPath, [join(INSTALL_ROOT, 'bin', 'broker'), ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  const lines: string[] = []
  const stderr: string[] = []
  const waiters = new Set<() => void>()
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)))
  const add = (line: string): void => {
    lines.push(line)
    for (const wake of [...waiters]) wake()
  }
  createInterface({ input: child.stdout! }).on('line', add)
  createInterface({ input: child.stderr! }).on('line', (line) => { stderr.push(line); add(line) })
  let ended = false
  void exited.then(() => { ended = true; for (const wake of [...waiters]) wake() })
  const line = async (text: string, from = 0, timeoutMs = 60_000): Promise<string> => await new Promise((resolve, reject) => {
    const timer = setTimeout(() => { waiters.delete(check); reject(new Error(`no line with "${text}" within ${timeoutMs} ms:\n${lines.join('\n')}`)) }, timeoutMs)
    const check = (): void => {
      const found = lines.slice(from).find((l) => l.includes(text))
      if (found === undefined && !ended) return
      waiters.delete(check)
      clearTimeout(timer)
      if (found !== undefined) resolve(found)
      else reject(new Error(`the broker exited before a line with "${text}":\n${lines.join('\n')}`))
    }
    waiters.add(check)
    check()
  })
  return { child, lines, stderr, exited, line }
}

/** The settings that keep a spawned node to itself: its listeners on 127.0.0.1 (ports the OS picks unless given), no login delay. */
export function isolatedSettings (settings: Record<string, string | number>): string {
  const all: Record<string, string | number> = {
    'listener.tcp.external': '127.0.0.1:0',
    'listener.ssl.external': 'off',
    'listener.ws.external': 'off',
    'listener.wss.external': 'off',
    'mqtt.auth_failure_delay': 0,
    'log.console.level': 'info',
    ...settings
  }
  return Object.entries(all).map(([key, value]) => `${key} = ${value}\n`).join('')
}

/** The port a listener bound, from its `listener started` line. */
export function boundPort (lines: readonly string[], listener: string): number {
  for (const line of lines) {
    if (!line.includes('"listener started"') || !line.includes(`"listener":"${listener}"`)) continue
    return Number((JSON.parse(line) as { address: string }).address.split(':').pop())
  }
  throw new Error(`no "listener started" line for ${listener}`)
}
