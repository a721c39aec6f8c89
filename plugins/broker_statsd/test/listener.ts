// A StatsD server for the tests: a real UDP socket on 127.0.0.1 that parses
// every line it receives (`name:value|type[|@rate][|#tag,tag]`) and keeps
// them, in arrival order.
import { createSocket, type Socket } from 'node:dgram'
import { once } from 'node:events'

export interface StatsdLine {
  name: string
  value: number
  type: string
  rate?: number
  tags?: string[]
  /** the line as it came */
  raw: string
}

const LINE = /^([^:|#@\s]+):(-?[0-9.]+(?:e[-+]?\d+)?)\|([a-z]+)(?:\|@([0-9.]+))?(?:\|#(.*))?$/

export function parseLine (raw: string): StatsdLine {
  const match = LINE.exec(raw)
  if (match === null) throw new Error(`not a StatsD line: ${JSON.stringify(raw)}`)
  const [, name, value, type, rate, tags] = match
  return { name, value: Number(value), type, rate: rate === undefined ? undefined : Number(rate), tags: tags?.split(','), raw }
}

export class StatsdListener {
  readonly lines: StatsdLine[] = []
  /** what arrived that is not a StatsD line */
  readonly garbage: string[] = []
  #waiters: Array<() => void> = []

  private constructor (readonly socket: Socket) {
    socket.on('message', (datagram) => {
      for (const raw of datagram.toString('utf8').split('\n')) {
        if (raw === '') continue
        try {
          this.lines.push(parseLine(raw))
        } catch {
          this.garbage.push(raw)
        }
      }
      for (const wake of this.#waiters.splice(0)) wake()
    })
  }

  static async start (): Promise<StatsdListener> {
    const socket = createSocket('udp4')
    socket.bind(0, '127.0.0.1')
    await once(socket, 'listening')
    return new StatsdListener(socket)
  }

  get port (): number {
    return this.socket.address().port
  }

  /** Resolves once `done(lines)` holds, checked at each arrival; rejects after `timeoutMs`. */
  async until (what: string, done: (lines: StatsdLine[]) => boolean, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs
    while (!done(this.lines)) {
      const left = deadline - Date.now()
      if (left <= 0) throw new Error(`no ${what} within ${timeoutMs} ms (${this.lines.length} lines arrived)`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left)
        this.#waiters.push(() => { clearTimeout(timer); resolve() })
      })
    }
  }

  async close (): Promise<void> {
    await new Promise<void>((resolve) => this.socket.close(() => resolve()))
  }
}
