// The node's end of the control channel (see protocol.ts): reads one request
// line, runs it through the command registry (writing the progress lines it
// reports when the request wants them), answers one line, closes.
import { chmod, unlink } from 'node:fs/promises'
import { connect, createServer, type Server, type Socket } from 'node:net'
import type { Logger } from '../log.js'
import { CtlError, EXIT, formatUsage, NO_PROGRESS, type CtlProgress } from './command.js'
import type { CtlProgressLine, CtlRequest, CtlResponse } from './protocol.js'
import type { CommandRegistry } from './registry.js'

const MAX_REQUEST = 64 * 1024

/** Whether a node answers on `path` (a socket left by a node killed with -9 does not). */
async function inUse (path: string): Promise<boolean> {
  return await new Promise((resolve) => {
    const probe = connect(path)
    probe.once('connect', () => { probe.destroy(); resolve(true) })
    probe.once('error', () => resolve(false))
  })
}

export class ControlServer {
  readonly #server: Server
  readonly #sockets = new Set<Socket>()

  private constructor (readonly path: string, private readonly commands: CommandRegistry, private readonly logger: Logger) {
    this.#server = createServer((socket) => this.#serve(socket))
  }

  static async start (path: string, commands: CommandRegistry, logger: Logger): Promise<ControlServer> {
    if (await inUse(path)) throw new Error(`another node answers on ${path}`)
    await unlink(path).catch(() => {})
    const control = new ControlServer(path, commands, logger)
    // the socket is made with the umask in force: no moment with a wider mode than 0600
    const umask = process.umask(0o177)
    try {
      await new Promise<void>((resolve, reject) => {
        control.#server.once('error', reject)
        control.#server.listen(path, () => resolve())
      })
    } finally {
      process.umask(umask)
    }
    await chmod(path, 0o600)
    return control
  }

  async stop (): Promise<void> {
    for (const socket of this.#sockets) socket.destroy()
    await new Promise<void>((resolve) => this.#server.close(() => resolve()))
    await unlink(this.path).catch(() => {})
  }

  #serve (socket: Socket): void {
    this.#sockets.add(socket)
    socket.on('close', () => this.#sockets.delete(socket))
    socket.on('error', () => socket.destroy())
    let input = ''
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => {
      input += chunk
      const end = input.indexOf('\n')
      if (end < 0 && input.length <= MAX_REQUEST) return
      socket.removeAllListeners('data')
      // anything after the request is read and dropped, so broker_ctl going away (Ctrl-C) is seen as the end of the stream
      socket.on('data', () => {})
      this.#answer(end < 0 ? undefined : input.slice(0, end), socket)
        .then((response) => socket.end(`${JSON.stringify(response)}\n`))
        .catch(() => socket.destroy())
    })
  }

  /** What a command reports while it runs, as lines before the answer; a no-op unless the request wants them. */
  #progress (request: CtlRequest, socket: Socket): CtlProgress {
    if (request.progress !== true) return NO_PROGRESS
    const gone = new AbortController()
    socket.once('close', () => gone.abort())
    return {
      wanted: true,
      signal: gone.signal,
      report: (text) => {
        const line: CtlProgressLine = { progress: text }
        if (socket.writable) socket.write(`${JSON.stringify(line)}\n`)
      }
    }
  }

  async #answer (line: string | undefined, socket: Socket): Promise<CtlResponse> {
    let request: CtlRequest
    try {
      request = JSON.parse(line ?? '') as CtlRequest
      if (!Array.isArray(request.argv) || !request.argv.every((a) => typeof a === 'string')) throw new Error('argv must be a list of strings')
    } catch (err) {
      return { ok: false, exit: EXIT.usage, error: `bad request: ${(err as Error).message}` }
    }
    try {
      const { text, data } = await this.commands.run(request.argv, this.#progress(request, socket))
      return { ok: true, text, data }
    } catch (err) {
      if (!(err instanceof CtlError)) {
        this.logger.error({ err, argv: request.argv }, 'broker_ctl command failed')
        return { ok: false, exit: EXIT.failed, error: (err as Error).message }
      }
      const command = this.commands.get(request.argv[0] ?? '')
      const usage = err.exit === EXIT.usage ? formatUsage(command?.usage ?? this.commands.list().flatMap((c) => c.usage)) : undefined
      return { ok: false, exit: err.exit, error: err.message, ...(usage === undefined ? {} : { usage }) }
    }
  }
}
