// A server process run by a test harness in the foreground: started, waited
// for until it prints a ready line, stopped (SIGTERM, then SIGKILL) or killed
// (SIGKILL). Every process still running when the test process exits is
// killed, so a failed test leaves no server behind.
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process'
import { connect } from 'node:net'
import { createInterface } from 'node:readline'

const running = new Set<ChildProcess>()
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL')
})

export interface ServerProcess {
  child: ChildProcess
  /** output lines so far (stdout and stderr) */
  lines: string[]
  exited: Promise<number | string>
}

/** Resolves true once a TCP connection to 127.0.0.1:`port` succeeds. */
export async function accepts (port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

/**
 * Spawns `command` and resolves once it is ready: a line of its output matches
 * `ready`, or (a port) it accepts connections there. Rejects if it exits first
 * or `timeoutMs` passes. `options`: e.g. the `uid`/`gid` and `cwd` to run it with.
 */
export async function startProcess (command: string, args: string[], ready: RegExp | number, timeoutMs = 15000, options: Pick<SpawnOptions, 'uid' | 'gid' | 'cwd'> = {}): Promise<ServerProcess> {
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] })
  running.add(child)
  const lines: string[] = []
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => {
    running.delete(child)
    resolve(code ?? signal ?? -1)
  }))
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`${command} did not become ready within ${timeoutMs}ms:\n${lines.join('\n')}`))
    }, timeoutMs)
    const done = (): void => {
      clearTimeout(timer)
      resolve()
    }
    const onLine = (line: string): void => {
      lines.push(line)
      if (typeof ready !== 'number' && ready.test(line)) done()
    }
    if (typeof ready === 'number') {
      const probe = async (): Promise<void> => {
        while (child.exitCode === null && child.signalCode === null) {
          if (await accepts(ready)) return done()
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
      }
      void probe()
    }
    createInterface({ input: child.stdout! }).on('line', onLine)
    createInterface({ input: child.stderr! }).on('line', onLine)
    child.once('error', (err) => {
      clearTimeout(timer)
      reject(err)
    })
    void exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`${command} exited (${code}) before it was ready:\n${lines.join('\n')}`))
    })
  })
  return { child, lines, exited }
}

/** SIGTERM, and SIGKILL if it has not exited after `graceMs`. Resolves once it has exited. */
export async function stopProcess (server: ServerProcess | undefined, graceMs = 5000): Promise<void> {
  if (!server || server.child.exitCode !== null || server.child.signalCode !== null) return
  server.child.kill('SIGTERM')
  const timer = setTimeout(() => server.child.kill('SIGKILL'), graceMs)
  await server.exited
  clearTimeout(timer)
}

/** SIGKILL; resolves once it has exited. */
export async function killProcess (server: ServerProcess | undefined): Promise<void> {
  if (!server || server.child.exitCode !== null || server.child.signalCode !== null) return
  server.child.kill('SIGKILL')
  await server.exited
}
