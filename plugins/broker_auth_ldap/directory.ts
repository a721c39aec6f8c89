// The plugin's connections to the directory: `auth.ldap.pool` ldapts
// clients (one TCP connection each), each bound as `bind_dn` and used in
// turn. A connection that fails moves to the next server of
// `auth.ldap.servers`; ldapts reconnects on the next operation and replays
// the bind (autoRebind).
import { readFileSync } from 'node:fs'
import { Client, InvalidDNSyntaxError, NoSuchObjectError, ResultCodeError, SizeLimitExceededError, type ClientOptions } from 'ldapts'
import type { AuthLdapConfig, Scope } from './settings.js'

export interface LookupResult {
  dn: string
  /** the password attribute's values, as text */
  passwords: string[]
}

class Connection {
  #client: Client | undefined
  #bound: Promise<void> | undefined
  #server = 0

  constructor (private readonly config: AuthLdapConfig, first: number) {
    this.#server = first
  }

  #options (): ClientOptions {
    const { host, port } = this.config['auth.ldap.servers'][this.#server % this.config['auth.ldap.servers'].length]
    const ssl = this.config['auth.ldap.ssl']
    const options: ClientOptions = {
      url: `${ssl ? 'ldaps' : 'ldap'}://${host.includes(':') ? `[${host}]` : host}:${port}`,
      timeout: this.config['auth.ldap.timeout'],
      connectTimeout: this.config['auth.ldap.timeout'],
      autoRebind: true
    }
    if (ssl) {
      const read = (key: 'auth.ldap.ssl.cacertfile' | 'auth.ldap.ssl.certfile' | 'auth.ldap.ssl.keyfile'): Buffer | undefined => {
        const path = this.config[key]
        return path === undefined ? undefined : readFileSync(path)
      }
      options.tlsOptions = { ca: read('auth.ldap.ssl.cacertfile'), cert: read('auth.ldap.ssl.certfile'), key: read('auth.ldap.ssl.keyfile'), rejectUnauthorized: this.config['auth.ldap.ssl.verify'] }
    }
    return options
  }

  async #ready (): Promise<Client> {
    if (this.#client === undefined) {
      const client = new Client(this.#options())
      this.#client = client
      const dn = this.config['auth.ldap.bind_dn']
      this.#bound = dn === '' ? Promise.resolve() : client.bind(dn, this.config['auth.ldap.bind_password'])
    }
    const client = this.#client
    try {
      await this.#bound
    } catch (err) {
      this.#drop(client)
      throw err
    }
    return client
  }

  /** Forgets a failed client; the next operation connects to the next server. */
  #drop (client: Client): void {
    if (this.#client !== client) return
    this.#client = undefined
    this.#bound = undefined
    this.#server++
    void client.unbind().catch(() => {})
  }

  async search (base: string, scope: Scope, filter: string, attribute: string): Promise<LookupResult[]> {
    const client = await this.#ready()
    try {
      const { searchEntries } = await client.search(base, { scope, filter, attributes: [attribute], explicitBufferAttributes: [attribute], sizeLimit: 2 })
      return searchEntries.map((entry) => {
        const raw = entry[attribute] ?? []
        const values = Array.isArray(raw) ? raw : [raw]
        return { dn: entry.dn, passwords: values.map((v) => Buffer.isBuffer(v) ? v.toString('utf8') : String(v)) }
      })
    } catch (err) {
      // no such entry, or none can exist (an empty or odd user name makes a base like `uid=,ou=…`): not found, not an outage
      if (err instanceof NoSuchObjectError || err instanceof InvalidDNSyntaxError) return []
      // more than the two entries asked for: as ambiguous as two
      if (err instanceof SizeLimitExceededError) return [{ dn: base, passwords: [] }, { dn: base, passwords: [] }]
      // an LDAP result code is an answer; anything else (socket, timeout) is a broken connection
      if (!(err instanceof ResultCodeError)) this.#drop(client)
      throw err
    }
  }

  close (): void {
    if (this.#client !== undefined) this.#drop(this.#client)
  }
}

export class Directory {
  readonly #connections: Connection[]
  #next = 0

  constructor (config: AuthLdapConfig) {
    this.#connections = Array.from({ length: config['auth.ldap.pool'] }, () => new Connection(config, 0))
  }

  async search (base: string, scope: Scope, filter: string, attribute: string): Promise<LookupResult[]> {
    const connection = this.#connections[this.#next]
    this.#next = (this.#next + 1) % this.#connections.length
    return await connection.search(base, scope, filter, attribute)
  }

  close (): void {
    for (const connection of this.#connections) connection.close()
  }
}
