// The commands the stand-in answers. Everything else is `{ok: 0, code: 59}`
// (CommandNotFound), as a real mongod answers an unknown command.
import { BSON, type Document } from 'mongodb'
import type { Authentication } from './auth.js'
import { BadQuery, matches, project, stringsEqual, type Collation } from './match.js'

/** How the stand-in presents itself in `hello`: a standalone mongod, a replica-set primary or a mongos. */
export type Topology = { kind: 'standalone' } | { kind: 'rs', setName: string } | { kind: 'mongos' }

export interface ServerState {
  /** `127.0.0.1:<port>` */
  host: string
  topology: Topology
  /** db → collection → documents */
  data: Map<string, Map<string, Document[]>>
  /** `db.collection` → its default collation (as `create` with `collation` sets it) */
  collations: Map<string, Collation>
  /** true when users exist: data commands need an authenticated connection */
  authRequired: boolean
  /** the `maxWireVersion` of `hello` (a lower one plays a server too old for the driver) */
  maxWireVersion: number
}

export interface ConnectionState {
  id: number
  auth: Authentication
}

/** Wire versions of MongoDB 7.0; the driver (7.x) needs at least 9 (4.4). */
export const MIN_WIRE_VERSION = 0
export const MAX_WIRE_VERSION = 21

const NO_AUTH_NEEDED = new Set(['hello', 'ismaster', 'ping', 'buildinfo', 'saslstart', 'saslcontinue', 'endsessions'])

export function commandName (command: Document): string {
  return Object.keys(command)[0] ?? ''
}

function hello (server: ServerState, connection: ConnectionState, command: Document): Document {
  const reply: Document = {
    helloOk: true,
    ismaster: true,
    isWritablePrimary: true,
    maxBsonObjectSize: 16 * 1024 * 1024,
    maxMessageSizeBytes: 48_000_000,
    maxWriteBatchSize: 100_000,
    localTime: new Date(),
    logicalSessionTimeoutMinutes: 30,
    connectionId: connection.id,
    minWireVersion: MIN_WIRE_VERSION,
    maxWireVersion: server.maxWireVersion,
    readOnly: false
  }
  if (server.topology.kind === 'rs') {
    Object.assign(reply, { setName: server.topology.setName, setVersion: 1, hosts: [server.host], primary: server.host, me: server.host, secondary: false })
  } else if (server.topology.kind === 'mongos') {
    reply.msg = 'isdbgrid'
  }
  if (typeof command.saslSupportedMechs === 'string') reply.saslSupportedMechs = ['SCRAM-SHA-256']
  return { ...reply, ok: 1 }
}

function find (server: ServerState, db: string, command: Document): Document {
  const collection = String(command.find)
  const filter = (command.filter ?? {}) as Document
  const docs = server.data.get(db)?.get(collection) ?? []
  const eq = stringsEqual((command.collation as Collation | undefined) ?? server.collations.get(`${db}.${collection}`))
  let found: Document[]
  try {
    found = docs.filter((doc) => matches(doc, filter, eq))
  } catch (err) {
    if (err instanceof BadQuery) return { ok: 0, errmsg: err.message, code: 2, codeName: 'BadValue' }
    throw err
  }
  const limit = Math.abs(Number(command.limit ?? 0))
  if (limit > 0) found = found.slice(0, limit)
  const firstBatch = found.map((doc) => project(doc, command.projection as Document | undefined))
  return { cursor: { firstBatch, id: BSON.Long.fromNumber(0), ns: `${db}.${collection}` }, ok: 1 }
}

/** The reply to one command. */
export async function answer (server: ServerState, connection: ConnectionState, db: string, command: Document): Promise<Document> {
  const name = commandName(command)
  const lower = name.toLowerCase()
  if (server.authRequired && connection.auth.user === undefined && !NO_AUTH_NEEDED.has(lower)) {
    return { ok: 0, errmsg: `Command ${name} requires authentication`, code: 13, codeName: 'Unauthorized' }
  }
  switch (lower) {
    case 'hello':
    case 'ismaster':
      return hello(server, connection, command)
    case 'ping':
    case 'endsessions':
      return { ok: 1 }
    case 'buildinfo':
      return { version: '7.0.0', versionArray: [7, 0, 0, 0], maxBsonObjectSize: 16 * 1024 * 1024, ok: 1 }
    case 'saslstart':
      return await connection.auth.start(db, command)
    case 'saslcontinue':
      return await connection.auth.continue(command)
    case 'find':
      return find(server, db, command)
    case 'killcursors':
      return { cursorsKilled: [], cursorsNotFound: command.cursors ?? [], cursorsAlive: [], cursorsUnknown: [], ok: 1 }
    default:
      return { ok: 0, errmsg: `no such command: '${name}'`, code: 59, codeName: 'CommandNotFound' }
  }
}
