// An id → password table for the built-in auth plugins (SPEC §5.2):
// broker_auth_username keys it by user name, broker_auth_clientid by client
// id. Ids come from the plugin's conf file (`<prefix>.<N>.<field>` and
// `<prefix>.<N>.password`, plain text as in EMQ X) and from run-time
// additions kept in the plugin's durable store as hashForStorage values
// (never plain text). A stored id overrides a configured one of the same name.
import { TextDecoder } from 'node:util'
import Joi from 'joi'
import { hashForStorage, hashPassword, parseHashSpec, verifyPassword, verifyStored } from './hash/password-hash.js'
import { definePlugin, type BrokerPlugin, type PluginContext, type PluginStore } from './contract.js'
import type { AuthenticateAnswer, AuthenticateRequest, ClientInfo, EnhancedAuthAnswer, EnhancedAuthRequest } from '../hooks/types.js'
import type { Logger } from '../log.js'
import { ScramServer, scramFromPassword, scramFromStored, type ScramCredentials } from './scram.js'
import { credentialCommand } from './credential-command.js'

/** What tells the two plugins apart. */
export interface CredentialKind {
  /** the plugin name, e.g. `broker_auth_username` */
  plugin: string
  /** the setting prefix, e.g. `auth.user` */
  prefix: string
  /** the id part of a numbered entry, `<prefix>.<N>.<field>`, e.g. `username` */
  field: string
  /** what messages call one entry, e.g. `user` */
  noun: string
  /** the id a connecting client presents, if any */
  identify: (client: ClientInfo) => string | undefined
  /** the broker_ctl command that manages the table (`users`, `clientid`) and how its usage names an id */
  command: { name: string, id: string }
  /** the priority of its `client.authenticate` handler (default 0: its place in the chain) */
  priority?: number
}

/** The validated settings: flat keys, string values. */
export type CredentialConfig = Readonly<Record<string, string>>

/** Accepted for EMQ X 3.x conf compatibility; has no effect (see README). */
export const PASSWORD_HASH_CHOICES = ['plain', 'md5', 'sha', 'sha256', 'sha512'] as const

/** Why an add/update/delete was refused; `code` lets the API pick a status. */
export type CredentialErrorCode = 'invalid' | 'exists' | 'missing' | 'configured'

export class CredentialError extends Error {
  constructor (readonly code: CredentialErrorCode, message: string) {
    super(message)
    this.name = 'CredentialError'
  }
}

const SHA256 = parseHashSpec('sha256')
const UTF8 = new TextDecoder('utf-8', { fatal: true })
const DENY: AuthenticateAnswer = { result: 'deny', reason: 'bad_username_or_password' }

function keyPatterns (kind: CredentialKind): { id: RegExp, password: RegExp } {
  const prefix = kind.prefix.replaceAll('.', '\\.')
  return { id: new RegExp(`^${prefix}\\.\\d+\\.${kind.field}$`), password: new RegExp(`^${prefix}\\.\\d+\\.password$`) }
}

/** The Joi schema: numbered id/password pairs (each needs its partner), ids unique, nothing else. */
export function credentialSchema (kind: CredentialKind): Joi.ObjectSchema<CredentialConfig> {
  const patterns = keyPatterns(kind)
  const paired = Joi.string().min(1).custom((value: string, helpers) => {
    const key = String(helpers.state.path?.at(-1))
    const siblings = helpers.state.ancestors[0] as Record<string, unknown>
    const isId = patterns.id.test(key)
    const partner = key.replace(/[^.]+$/, isId ? 'password' : kind.field)
    if (siblings[partner] === undefined) return helpers.message({ custom: `"${partner}" is required with "${key}"` })
    const keys = Object.keys(siblings)
    const twin = isId ? keys.slice(0, keys.indexOf(key)).find((k) => patterns.id.test(k) && siblings[k] === value) : undefined
    if (twin !== undefined) return helpers.message({ custom: `"${key}" names the same ${kind.noun} as "${twin}"` })
    return value
  })
  return Joi.object<CredentialConfig>({
    [`${kind.prefix}.password_hash`]: Joi.string().valid(...PASSWORD_HASH_CHOICES).default('sha256')
  }).pattern(patterns.id, paired).pattern(patterns.password, paired)
}

/** The configured ids with their plain-text passwords. */
export function configuredCredentials (kind: CredentialKind, config: CredentialConfig): Map<string, string> {
  const { id } = keyPatterns(kind)
  const entries = Object.keys(config).filter((key) => id.test(key))
    .map((key): [string, string] => [config[key], config[key.replace(/[^.]+$/, 'password')]])
  return new Map(entries)
}

// The API is also called with parsed JSON, so the types are checked here too.
function checkId (kind: CredentialKind, id: unknown): void {
  if (typeof id !== 'string' || id === '') throw new CredentialError('invalid', `the ${kind.noun} must be a non-empty string`)
}

function checkPassword (password: unknown): void {
  if (typeof password !== 'string' || password === '') throw new CredentialError('invalid', 'the password must be a non-empty string')
}

/** One loaded instance: configured ids (as SHA-256 digests in memory) over the durable store. */
export class CredentialTable {
  #queue: Promise<unknown> = Promise.resolve()

  private constructor (
    readonly kind: CredentialKind,
    private readonly configured: ReadonlyMap<string, string>,
    private readonly configuredScram: ReadonlyMap<string, ScramCredentials>,
    private readonly store: PluginStore,
    private readonly logger: Logger
  ) {}

  static async open (kind: CredentialKind, config: CredentialConfig, store: PluginStore, logger: Logger): Promise<CredentialTable> {
    const digests = new Map<string, string>()
    const scram = new Map<string, ScramCredentials>()
    for (const [id, password] of configuredCredentials(kind, config)) {
      digests.set(id, await hashPassword(SHA256, password))
      scram.set(id, await scramFromPassword(password))
    }
    return new CredentialTable(kind, digests, scram, store, logger)
  }

  /** SCRAM-SHA-256 keys of an id (a stored one's pbkdf2 hash is its SaltedPassword), or undefined. */
  async scram (id: string): Promise<ScramCredentials | undefined> {
    const stored = await this.store.get(id)
    return stored !== undefined ? scramFromStored(stored) : this.configuredScram.get(id)
  }

  /** Whether the id is configured or stored. */
  async has (id: string): Promise<boolean> {
    return this.configured.has(id) || await this.store.get(id) !== undefined
  }

  /** `unknown` if no such id; otherwise whether `password` (CONNECT bytes) matches. */
  async check (id: string, password: Buffer | undefined): Promise<'unknown' | 'match' | 'mismatch'> {
    const stored = await this.store.get(id)
    const digest = this.configured.get(id)
    if (stored === undefined && digest === undefined) return 'unknown'
    let text: string
    try {
      text = UTF8.decode(password ?? Buffer.alloc(0))
    } catch {
      return 'mismatch' // not UTF-8, so not any password set here
    }
    const ok = stored !== undefined ? await verifyStored(text, stored) : await verifyPassword(SHA256, text, digest!)
    return ok ? 'match' : 'mismatch'
  }

  /** Adds a run-time id; an id already configured or stored is refused. */
  async add (id: string, password: string): Promise<void> {
    checkId(this.kind, id)
    checkPassword(password)
    await this.#serial(async () => {
      if (this.configured.has(id)) throw new CredentialError('exists', `${this.kind.noun} "${id}" already exists (configured in etc/plugins/${this.kind.plugin}.conf)`)
      if (await this.store.get(id) !== undefined) throw new CredentialError('exists', `${this.kind.noun} "${id}" already exists`)
      await this.store.put(id, await hashForStorage(password))
      this.logger.info({ [this.kind.field]: id }, `${this.kind.noun} added`)
    })
  }

  /** Sets a new password; for a configured id this stores an overriding entry. */
  async update (id: string, password: string): Promise<void> {
    checkId(this.kind, id)
    checkPassword(password)
    await this.#serial(async () => {
      if (!this.configured.has(id) && await this.store.get(id) === undefined) throw this.#missing(id)
      await this.store.put(id, await hashForStorage(password))
      this.logger.info({ [this.kind.field]: id }, `${this.kind.noun} updated`)
    })
  }

  /** Deletes a stored id (a configured id of the same name applies again); a configured-only id is refused. */
  async delete (id: string): Promise<void> {
    checkId(this.kind, id)
    await this.#serial(async () => {
      if (await this.store.get(id) === undefined) {
        if (!this.configured.has(id)) throw this.#missing(id)
        throw new CredentialError('configured', `${this.kind.noun} "${id}" is configured in etc/plugins/${this.kind.plugin}.conf; remove it there`)
      }
      await this.store.del(id)
      this.logger.info({ [this.kind.field]: id }, `${this.kind.noun} deleted`)
    })
  }

  /** Configured and stored ids, sorted, each once. */
  async list (): Promise<string[]> {
    const ids = new Set(this.configured.keys())
    for await (const [id] of this.store.entries()) ids.add(id)
    return [...ids].sort()
  }

  #missing (id: string): CredentialError {
    return new CredentialError('missing', `${this.kind.noun} "${id}" does not exist`)
  }

  /** Runs changes one at a time, so two adds of one id cannot both pass the check. */
  async #serial (task: () => Promise<void>): Promise<void> {
    const run = this.#queue.then(task)
    this.#queue = run.catch(() => undefined)
    await run
  }
}

/** The `client.authenticate` handler (SPEC §5.2 rule 3): unknown id → ignore, right password → allow, else deny. */
export function authenticator (table: CredentialTable): (request: AuthenticateRequest) => Promise<AuthenticateAnswer> {
  return async ({ client, password }) => {
    const id = table.kind.identify(client)
    if (id === undefined || id === '') return 'ignore'
    const outcome = await table.check(id, password)
    if (outcome === 'unknown') return 'ignore'
    return outcome === 'match' ? { result: 'allow' } : DENY
  }
}

export const SCRAM_METHOD = 'SCRAM-SHA-256'

/**
 * MQTT 5 enhanced authentication with SCRAM-SHA-256 (RFC 7677) over the
 * table's ids: step 0 carries client-first, step 1 client-final. When the
 * CONNECT also names a user, it must be the SCRAM user.
 */
export function scramAuthenticator (table: CredentialTable): (request: EnhancedAuthRequest) => Promise<EnhancedAuthAnswer> {
  const deny: EnhancedAuthAnswer = { result: 'deny', reason: 'bad_username_or_password' }
  return async ({ client, method, data, step, state }) => {
    if (method !== SCRAM_METHOD) return 'ignore'
    const message = data ?? Buffer.alloc(0)
    if (step === 0) {
      const server = new ScramServer(async (id) => await table.scram(id))
      const first = await server.first(message)
      if ('error' in first || (client.username !== undefined && client.username !== first.username)) return deny
      return { result: 'continue', data: first.serverFirst, state: server }
    }
    const final = await (state as ScramServer).final(message)
    return 'error' in final ? deny : { result: 'allow', data: final.serverFinal }
  }
}

/** What a loaded credential plugin offers (`ctx.provide`): the table the CLI and the management API change. */
export interface CredentialApi {
  /** Adds an id (stored durably as a pbkdf2 hash); CredentialError `exists` if configured or stored. */
  add: (id: string, password: string) => Promise<void>
  /** Changes a password; for a configured id this stores an overriding entry; `missing` for an unknown id. */
  update: (id: string, password: string) => Promise<void>
  /** Deletes a stored id; `missing` for an unknown one, `configured` for one only in the conf file. */
  delete: (id: string) => Promise<void>
  /** Configured and stored ids, sorted. */
  list: () => Promise<string[]>
}

/** Builds broker_auth_username / broker_auth_clientid; `more` adds further hooks. Each load has its own table. */
export function credentialPlugin (kind: CredentialKind, description: string, more?: (ctx: PluginContext<CredentialConfig>, table: CredentialTable) => void): BrokerPlugin<CredentialConfig> {
  return definePlugin<CredentialConfig>({
    name: kind.plugin,
    version: '0.1.0',
    description,
    schema: credentialSchema(kind),
    async load (ctx) {
      const table = await CredentialTable.open(kind, ctx.config, ctx.store, ctx.logger)
      ctx.hooks.add('client.authenticate', authenticator(table), kind.priority)
      ctx.commands.add(credentialCommand(table))
      more?.(ctx, table)
      ctx.provide({
        add: async (id, password) => await table.add(id, password),
        update: async (id, password) => await table.update(id, password),
        delete: async (id) => await table.delete(id),
        list: async () => await table.list()
      } satisfies CredentialApi)
    }
  })
}
