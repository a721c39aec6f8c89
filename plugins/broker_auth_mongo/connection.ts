// The settings → the official driver's MongoClient. `auth.mongo.type`:
// - single: a direct connection to the one server (`directConnection`);
// - rs: the servers are seeds of the replica set `rs_set_name` (`replicaSet`);
//   the driver finds the primary and follows fail-overs;
// - sharded, unknown: the servers are seeds and the driver discovers what they
//   are (several mongos for sharded; the driver treats both alike).
// The driver's server selection and connect timeouts are four fifths of the
// query timeout, so a query that cannot be answered ends inside the driver
// first, with the driver's reason (`connect ECONNREFUSED …`, `… reports
// maximum wire version 6, but this version of the Node.js Driver requires at
// least 9`), before the BackendGuard's plain "did not answer" at the full
// query timeout.
import { MongoClient, MongoTopologyClosedError, type Db, type MongoClientOptions } from 'mongodb'
import { serverText } from '../../lib/plugin-kit/index.js'
import type { AuthMongoConfig } from './settings.js'

/** The driver's own deadline inside the query timeout `ms` (its error says why; the guard's would not). */
export function driverTimeout (ms: number): number {
  return Math.max(1, Math.floor(ms * 4 / 5))
}

export function clientOptions (config: AuthMongoConfig): MongoClientOptions {
  const type = config['auth.mongo.type']
  const timeout = driverTimeout(config['auth.mongo.query_timeout'])
  const options: MongoClientOptions = {
    appName: 'broker_auth_mongo',
    maxPoolSize: config['auth.mongo.pool'],
    minPoolSize: 0,
    directConnection: type === 'single',
    serverSelectionTimeoutMS: timeout,
    connectTimeoutMS: timeout
  }
  if (type === 'rs') options.replicaSet = config['auth.mongo.rs_set_name']
  const login = config['auth.mongo.login']
  if (login !== undefined) {
    options.auth = { username: login, password: config['auth.mongo.password'] ?? '' }
    options.authSource = config['auth.mongo.auth_source']
  }
  return options
}

/** `host:port,host:port` of the settings, for logs and the alarm. */
export function serversText (config: AuthMongoConfig): string {
  return config['auth.mongo.server'].map(serverText).join(',')
}

/**
 * The client and its database. A MongoClient whose first connect failed
 * stays closed ("Topology is closed") for every later operation; only a new
 * `connect()` opens it again. So each query first makes sure the client is
 * connected (one connect at a time, shared by the queries waiting for it),
 * and a closed topology is connected again by the next query. Once
 * connected, the driver itself follows a server that goes away and returns.
 */
export class MongoConnection {
  readonly client: MongoClient
  readonly database: string
  #connecting: Promise<void> | undefined
  #connected = false
  #closed = false

  constructor (config: AuthMongoConfig) {
    this.client = new MongoClient(`mongodb://${serversText(config)}/`, clientOptions(config))
    this.database = config['auth.mongo.database']
  }

  async connect (): Promise<void> {
    if (this.#closed) throw new MongoTopologyClosedError()
    if (this.#connected) return
    this.#connecting ??= this.client.connect().then(() => {
      this.#connected = !this.#closed
    }).finally(() => {
      this.#connecting = undefined
    })
    await this.#connecting
  }

  /** Runs `query` on the database, connecting first when needed. */
  async run<T> (query: (db: Db) => Promise<T>): Promise<T> {
    await this.connect()
    try {
      return await query(this.client.db(this.database))
    } catch (err) {
      if (err instanceof MongoTopologyClosedError) this.#connected = false
      throw err
    }
  }

  async close (): Promise<void> {
    this.#closed = true
    this.#connected = false
    await this.client.close()
  }
}
