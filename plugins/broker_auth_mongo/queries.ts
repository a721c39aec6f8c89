// The three queries, as EMQ X 3.x emqx_auth_mongo made them: findOne in the
// auth collection by the auth selector (the password field, and the salt
// field when configured); findOne in the super collection by the super
// selector (its super field); find in the ACL collection by the ACL
// selectors ORed.
import { BSON, type Db, type Document } from 'mongodb'
import type { QueryValues, StoredUser } from '../../lib/plugin-kit/index.js'
import { anySelectorFilter, selectorFilter, userNameField, type Selector } from './selector.js'

export interface AuthQuery {
  collection: string
  /** the password field, then the salt field when there is one */
  fields: readonly string[]
  selector: Selector
}

export interface SuperQuery {
  collection: string
  field: string
  selector: Selector
}

export interface AclQuery {
  collection: string
  selectors: readonly Selector[]
}

/** A stored field as text: strings as they are, binary as UTF-8, numbers written out; anything else is absent. */
export function textOf (value: unknown): string | undefined {
  if (typeof value === 'string') return value
  if (value instanceof BSON.Binary) return Buffer.from(value.buffer.subarray(0, value.position)).toString('utf8')
  if (typeof value === 'number' || typeof value === 'bigint') return String(value)
  return undefined
}

function projection (fields: readonly string[]): Document {
  return Object.fromEntries(fields.map((f) => [f, 1]))
}

/**
 * The stored password (and salt); `password` is '' when the document has no password field (it never matches).
 * The selector's `%u` field as stored is the user name (a collection with a case-insensitive collation finds
 * `alice` for `ALICE`: the client is then known as `alice`).
 */
export async function findUser (db: Db, query: AuthQuery, values: QueryValues): Promise<StoredUser | undefined> {
  const filter = selectorFilter(query.selector, values)
  if (filter === undefined) return undefined
  const nameField = userNameField(query.selector)
  const fields = nameField === undefined ? query.fields : [...query.fields, nameField]
  const doc = await db.collection(query.collection).findOne(filter, { projection: projection(fields) })
  if (doc === null) return undefined
  const [passwordField, saltField] = query.fields
  const user: StoredUser = { password: textOf(doc[passwordField!]) ?? '' }
  const salt = saltField === undefined ? undefined : textOf(doc[saltField])
  if (salt !== undefined) user.salt = salt
  const storedName = nameField === undefined ? undefined : doc[nameField]
  if (typeof storedName === 'string' && storedName !== '') user.username = storedName
  return user
}

/** The super field of the document the super selector finds; undefined when there is none. */
export async function superField (db: Db, query: SuperQuery, values: QueryValues): Promise<unknown> {
  const filter = selectorFilter(query.selector, values)
  if (filter === undefined) return undefined
  const doc = await db.collection(query.collection).findOne(filter, { projection: projection([query.field]) })
  return doc?.[query.field]
}

/** The ACL documents of a client (every selector that can match, ORed). */
export async function aclDocuments (db: Db, query: AclQuery, values: QueryValues): Promise<Document[]> {
  const filter = anySelectorFilter(query.selectors, values)
  if (filter === undefined) return []
  return await db.collection(query.collection).find(filter, { projection: projection(['publish', 'subscribe', 'pubsub']) }).toArray()
}
