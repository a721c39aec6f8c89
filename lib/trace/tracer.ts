// `broker_ctl trace`: every packet of one client, or every message published
// to a topic filter, written to a file. While no trace runs, the engine's
// packet observers are the metrics' own and no `publish` listener is added:
// a trace costs nothing until it starts.
import { createWriteStream, type WriteStream } from 'node:fs'
import type { Aedes, AedesPublishPacket, Client } from 'aedes'
import type { Packet } from 'mqtt-packet'
import { topicMatches } from '../access/acl-match.js'
import { packetObservers, setPacketObservers } from '../engine/internals.js'
import { topicBeforeRewrite } from '../hooks/rewritten.js'
import { connInfo } from '../listeners/conn-info.js'
import type { Logger } from '../log.js'
import { rfc3339 } from '../timestamps.js'
import { describePacket, traceLine } from './describe.js'

export type TraceKind = 'client' | 'topic'

/** A trace as `trace list` shows it. */
export interface TraceRecord { type: TraceKind, name: string, destination: string }

export class TraceError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'TraceError'
  }
}

interface TraceFile { file: string, stream: WriteStream }

async function open (file: string): Promise<WriteStream> {
  const stream = createWriteStream(file, { flags: 'a', mode: 0o600 })
  await new Promise<void>((resolve, reject) => {
    stream.once('open', () => resolve())
    stream.once('error', reject)
  }).catch((err: Error) => { throw new TraceError(`cannot write ${file}: ${err.message}`) })
  return stream
}

async function close ({ stream }: TraceFile): Promise<void> {
  await new Promise<void>((resolve) => stream.end(resolve))
}

const now = (): string => rfc3339()

/** `@<address>:<port>` of a client's connection, as the listener recorded it. */
function peer (client: Client): string {
  const conn = connInfo(client.conn)
  return conn === undefined ? '' : `@${conn.ipAddress}:${conn.port}`
}

export class Tracer {
  readonly #traces: Record<TraceKind, Map<string, TraceFile>> = { client: new Map(), topic: new Map() }
  readonly #base: ReturnType<typeof packetObservers>
  readonly #onPublish = (packet: AedesPublishPacket, client: Client | null): void => this.#published(packet, client)

  constructor (private readonly engine: Aedes, private readonly logger: Logger) {
    this.#base = packetObservers(engine)
  }

  list (): TraceRecord[] {
    return (['client', 'topic'] as const).flatMap((type) => [...this.#traces[type]].map(([name, { file }]) => ({ type, name, destination: file })))
  }

  /** Starts writing to `file` (appending); a name already traced is refused. */
  async start (type: TraceKind, name: string, file: string): Promise<void> {
    const traces = this.#traces[type]
    if (traces.has(name)) throw new TraceError(`${type} ${name} is traced already (to ${traces.get(name)!.file})`)
    const trace = { file, stream: await open(file) }
    if (traces.has(name)) {
      await close(trace)
      throw new TraceError(`${type} ${name} is traced already`)
    }
    trace.stream.on('error', (err) => {
      this.logger.error({ err, trace: `${type} ${name}`, file }, 'trace file failed; trace stopped')
      this.#forget(type, name)
    })
    traces.set(name, trace)
    this.#observe()
    this.logger.info({ trace: `${type} ${name}`, file }, 'trace started')
  }

  /** Stops a trace once everything it wrote is in the file; false when there was none. */
  async stop (type: TraceKind, name: string): Promise<boolean> {
    const trace = this.#forget(type, name)
    if (trace === undefined) return false
    await close(trace)
    this.logger.info({ trace: `${type} ${name}`, file: trace.file }, 'trace stopped')
    return true
  }

  async stopAll (): Promise<void> {
    for (const { type, name } of this.list()) await this.stop(type, name)
  }

  #forget (type: TraceKind, name: string): TraceFile | undefined {
    const trace = this.#traces[type].get(name)
    this.#traces[type].delete(name)
    this.#observe()
    return trace
  }

  /** Hooks in what the running traces need, and nothing more. */
  #observe (): void {
    const { packetIn, packetOut } = this.#base
    if (this.#traces.client.size === 0) {
      setPacketObservers(this.engine, this.#base)
    } else {
      setPacketObservers(this.engine, {
        packetIn: (client, packet) => {
          packetIn?.(client, packet)
          this.#packet('RECV', client, packet)
        },
        packetOut: (client, packet) => {
          packetOut?.(client, packet)
          this.#packet('SEND', client, packet)
        }
      })
    }
    // a topic trace records every publish; a client trace the rewrites of its client's publishes
    const emitter = this.engine as unknown as NodeJS.EventEmitter
    emitter.off('publish', this.#onPublish)
    if (this.#traces.topic.size > 0 || this.#traces.client.size > 0) emitter.on('publish', this.#onPublish)
  }

  #packet (direction: 'RECV' | 'SEND', client: Client, packet: Packet): void {
    const id = packet.cmd === 'connect' ? packet.clientId : client.id
    const trace = this.#traces.client.get(id)
    if (trace === undefined) return
    trace.stream.write(traceLine(`${now()} ${id}${peer(client)} ${direction} ${describePacket(packet)}`))
  }

  /**
   * A message routed: each topic trace whose filter matches its topic, or the
   * topic its publisher wrote before a `message.publish` handler rewrote it;
   * the client trace of its publisher when it was rewritten.
   */
  #published (packet: AedesPublishPacket, client: Client | null): void {
    const original = topicBeforeRewrite(packet)
    const rewritten = original === undefined ? '' : ` rewritten from ${original}`
    for (const [filter, trace] of this.#traces.topic) {
      if (!topicMatches(filter, packet.topic) && (original === undefined || !topicMatches(filter, original))) continue
      const from = client === null ? 'node' : client.id
      trace.stream.write(traceLine(`${now()} ${filter} PUBLISH from ${from} ${describePacket(packet)}${rewritten}`))
    }
    const trace = original === undefined || client === null ? undefined : this.#traces.client.get(client.id)
    if (trace !== undefined) trace.stream.write(traceLine(`${now()} ${client!.id}${peer(client!)} REWRITE PUBLISH ${original!} -> ${packet.topic}`))
  }
}
