// A MongoDB wire-protocol STAND-IN for tests — not a real mongod. MongoDB
// cannot be installed on the test machines, so the mongo auth plugin's tests
// run the real `mongodb` driver against this small TCP server: OP_MSG (and the
// legacy OP_QUERY handshake), hello/isMaster, ping, buildInfo, endSessions,
// SCRAM-SHA-256 saslStart/saslContinue, `find` with equality/$in/$or/$and
// filters over in-memory collections (one batch, cursor id 0; a collection's
// default collation or the command's may make it case-insensitive), killCursors;
// any other command is CommandNotFound (59). It can stop, be killed (sockets
// destroyed), restart on the same port, and answer chosen commands late.
import { once } from 'node:events'
import { createServer, type Server, type Socket } from 'node:net'
import type { Document } from 'mongodb'
import { Authentication, type StandinUser } from './mongo-standin/auth.js'
import { answer, commandName, MAX_WIRE_VERSION, type ServerState, type Topology } from './mongo-standin/commands.js'
import type { Collation } from './mongo-standin/match.js'
import { encodeReply, MessageReader, parseRequest } from './mongo-standin/wire.js'

export type { StandinUser } from './mongo-standin/auth.js'
export type { Topology } from './mongo-standin/commands.js'
export type { Collation } from './mongo-standin/match.js'

export interface MongoStandinOptions {
  /** standalone (default), a replica-set primary (`{kind: 'rs', setName}`) or a mongos */
  topology?: Topology
  /** users for SCRAM-SHA-256; when there are any, data commands need authentication */
  users?: StandinUser[]
  /** db → collection → documents */
  data?: Record<string, Record<string, Document[]>>
  /** listen on this port (default: a free one) */
  port?: number
  /** the wire version `hello` reports (default: MongoDB 7.0's 21; 7 plays a MongoDB 3.6, too old for the driver) */
  maxWireVersion?: number
}

/** A command the stand-in received. */
export interface SeenCommand {
  db: string
  name: string
  command: Document
  /** true when it came as a legacy OP_QUERY (the driver's first handshake) */
  legacy: boolean
}

export class MongoStandin {
  readonly seen: SeenCommand[] = []
  readonly #state: ServerState
  readonly #users: StandinUser[]
  readonly #sockets = new Set<Socket>()
  readonly #waits = new Map<NodeJS.Timeout, () => void>()
  #server: Server | undefined
  #port = 0
  #nextConnection = 1
  #peak = 0
  #delay = { ms: 0, commands: new Set<string>() }

  private constructor (options: MongoStandinOptions) {
    this.#users = options.users ?? []
    const data = new Map<string, Map<string, Document[]>>()
    for (const [db, collections] of Object.entries(options.data ?? {})) {
      data.set(db, new Map(Object.entries(collections).map(([name, docs]) => [name, [...docs]])))
    }
    this.#state = { host: '', topology: options.topology ?? { kind: 'standalone' }, data, collations: new Map(), authRequired: this.#users.length > 0, maxWireVersion: options.maxWireVersion ?? MAX_WIRE_VERSION }
  }

  static async start (options: MongoStandinOptions = {}): Promise<MongoStandin> {
    const standin = new MongoStandin(options)
    await standin.#listen(options.port ?? 0)
    return standin
  }

  get port (): number { return this.#port }
  /** `127.0.0.1:<port>`, as `auth.mongo.server` wants it */
  get host (): string { return `127.0.0.1:${this.#port}` }
  get running (): boolean { return this.#server !== undefined }
  /** open client connections */
  get connections (): number { return this.#sockets.size }
  /** the most client connections open at once since the start (or the last `resetPeak`) */
  get peakConnections (): number { return this.#peak }
  resetPeak (): void { this.#peak = this.#sockets.size }

  /** The documents of a collection (created empty); the array may be changed between queries. */
  collection (db: string, name: string): Document[] {
    const collections = this.#state.data.get(db) ?? new Map<string, Document[]>()
    this.#state.data.set(db, collections)
    const docs = collections.get(name) ?? []
    collections.set(name, docs)
    return docs
  }

  /** Gives a collection a default collation, as `db.createCollection(name, {collation})` does on a mongod. */
  collate (db: string, name: string, collation: Collation): void {
    this.#state.collations.set(`${db}.${name}`, collation)
  }

  /** Answer these commands (lower case; default `find`) `ms` late; `slow(0)` ends it. */
  slow (ms: number, commands: string[] = ['find']): void {
    this.#delay = { ms, commands: new Set(commands.map((c) => c.toLowerCase())) }
  }

  /** The commands seen with this name (case-insensitive). */
  commands (name: string): SeenCommand[] {
    return this.seen.filter((s) => s.name.toLowerCase() === name.toLowerCase())
  }

  async #listen (port: number): Promise<void> {
    const server = createServer((socket) => this.#accept(socket))
    server.listen(port, '127.0.0.1')
    await once(server, 'listening')
    this.#server = server
    this.#port = (server.address() as { port: number }).port
    this.#state.host = `127.0.0.1:${this.#port}`
  }

  #accept (socket: Socket): void {
    this.#sockets.add(socket)
    this.#peak = Math.max(this.#peak, this.#sockets.size)
    const connection = { id: this.#nextConnection++, auth: new Authentication(this.#users) }
    const reader = new MessageReader()
    socket.on('close', () => this.#sockets.delete(socket))
    socket.on('error', () => {})
    socket.on('data', (chunk) => {
      try {
        for (const message of reader.push(chunk)) void this.#handle(socket, connection, message)
      } catch {
        socket.destroy()
      }
    })
  }

  async #handle (socket: Socket, connection: { id: number, auth: Authentication }, message: Buffer): Promise<void> {
    try {
      const request = parseRequest(message)
      const name = commandName(request.command)
      this.seen.push({ db: request.db, name, command: request.command, legacy: request.legacy })
      const reply = await answer(this.#state, connection, request.db, request.command)
      if (this.#delay.ms > 0 && this.#delay.commands.has(name.toLowerCase())) await this.#wait(this.#delay.ms)
      if (!request.noReply && !socket.destroyed) socket.write(encodeReply(request, reply))
    } catch {
      socket.destroy()
    }
  }

  async #wait (ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.#waits.delete(timer)
        resolve()
      }, ms)
      this.#waits.set(timer, resolve)
    })
  }

  async #close (how: 'end' | 'destroy'): Promise<void> {
    const server = this.#server
    if (server === undefined) return
    this.#server = undefined
    const closed = new Promise((resolve) => server.close(resolve))
    // destroySoon: FIN once pending writes are out, then close without waiting for the client's side
    for (const socket of this.#sockets) {
      if (how === 'destroy') socket.destroy()
      else socket.destroySoon()
    }
    await closed
    this.#sockets.clear() // all closed now; their 'close' events may still be on their way
  }

  /** Stops listening and closes every connection gracefully (FIN); answers still delayed are not sent. */
  async stop (): Promise<void> {
    await this.#close('end')
  }

  /** Stops at once: listening ends, every socket is destroyed, delayed answers are dropped. */
  async kill (): Promise<void> {
    await this.#close('destroy')
    for (const [timer, resolve] of this.#waits) {
      clearTimeout(timer)
      resolve()
    }
    this.#waits.clear()
  }

  /** Listens again on the same port (after stop or kill). */
  async restart (): Promise<void> {
    if (this.#server !== undefined) throw new Error('the stand-in is running')
    await this.#listen(this.#port)
  }
}
