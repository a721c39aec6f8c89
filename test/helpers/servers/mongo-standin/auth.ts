// SCRAM-SHA-256 for the stand-in (saslStart / saslContinue), on the broker's
// own SCRAM server (lib/access/scram.ts): a MongoDB SCRAM payload is exactly
// RFC 5802's messages, so one implementation serves both.
import { BSON, type Document } from 'mongodb'
import { ScramServer, scramFromPassword, type ScramCredentials } from '../../../../lib/plugin-kit/scram.js'

export interface StandinUser {
  /** the authentication database (`authSource`) */
  db: string
  user: string
  password: string
}

/** Per-connection authentication state. */
export class Authentication {
  /** `db.user` once a conversation succeeded */
  user: string | undefined
  #conversation: { scram: ScramServer, db: string } | undefined

  constructor (private readonly users: readonly StandinUser[]) {}

  async #lookup (db: string, name: string): Promise<ScramCredentials | undefined> {
    const found = this.users.find((u) => u.db === db && u.user === name)
    return found === undefined ? undefined : await scramFromPassword(found.password)
  }

  async start (db: string, command: Document): Promise<Document> {
    if (command.mechanism !== 'SCRAM-SHA-256') return failure(`Received authentication for mechanism ${String(command.mechanism)} which is not enabled`, 2)
    const scram = new ScramServer(async (name) => await this.#lookup(db, name), { fakeIterations: 4096 })
    this.#conversation = { scram, db }
    const first = await scram.first(payloadOf(command))
    if ('error' in first) return failure(first.error)
    return { conversationId: 1, done: false, payload: new BSON.Binary(first.serverFirst), ok: 1 }
  }

  async continue (command: Document): Promise<Document> {
    const conversation = this.#conversation
    this.#conversation = undefined
    if (conversation === undefined) return failure('No SASL session state found', 17)
    const final = await conversation.scram.final(payloadOf(command))
    if ('error' in final) return failure(final.error)
    this.user = `${conversation.db}.${final.username}`
    return { conversationId: 1, done: true, payload: new BSON.Binary(final.serverFinal), ok: 1 }
  }
}

function payloadOf (command: Document): Buffer {
  const payload: unknown = command.payload
  if (payload instanceof BSON.Binary) return Buffer.from(payload.buffer.subarray(0, payload.position))
  return Buffer.isBuffer(payload) ? payload : Buffer.alloc(0)
}

function failure (why: string, code = 18): Document {
  return { ok: 0, errmsg: `Authentication failed. (${why})`, code, codeName: code === 18 ? 'AuthenticationFailed' : 'BadValue' }
}
