// The `acl` claim (EMQ X 4.3 style): {"acl": {"pub": [...], "sub": [...], "all": [...]}}.
// A client whose token carries one may publish / subscribe only where a
// filter of the claim matches; other clients are left to the rest of the chain.
import { compileTopicFilter, topicMatches, type AclAccess, type ClientInfo } from '../../lib/plugin-kit/index.js'
import { isRecord } from './verify.js'

export interface TokenAcl {
  publish: string[]
  subscribe: string[]
}

/** The claim's rules; undefined when the token has no `acl` claim. Throws when it is malformed. */
export function aclFromClaims (claims: Record<string, unknown>): TokenAcl | undefined {
  const acl = claims.acl
  if (acl === undefined) return undefined
  if (!isRecord(acl)) throw new Error('the acl claim is not an object')
  const all = filters(acl, 'all')
  return { publish: [...filters(acl, 'pub'), ...all], subscribe: [...filters(acl, 'sub'), ...all] }
}

function filters (acl: Record<string, unknown>, key: string): string[] {
  const list = acl[key]
  if (list === undefined) return []
  if (!Array.isArray(list) || !list.every((f) => typeof f === 'string')) throw new Error(`acl.${key} is not a list of topic filters`)
  for (const filter of list) compileTopicFilter(filter) // throws on an invalid filter
  return list
}

export function aclAllows (acl: TokenAcl, access: AclAccess, topic: string): boolean {
  if (access === 'publish') return acl.publish.some((rule) => topicMatches(rule, topic))
  return acl.subscribe.some((rule) => covers(rule, topic))
}

/**
 * Whether every topic the requested filter matches is matched by `rule`.
 * topicMatches compares the filter's levels literally, which is right except
 * that a rule `+` would accept a requested `#` (`s/+` must not grant `s/#`):
 * a trailing `#` is only covered by a rule `#` at the same level or above.
 */
function covers (rule: string, filter: string): boolean {
  if (!topicMatches(rule, filter)) return false
  const levels = filter.split('/')
  if (levels[levels.length - 1] !== '#') return true
  const ruleHash = rule.split('/').indexOf('#')
  return ruleHash !== -1 && ruleHash < levels.length
}

/**
 * One key per connection, not per client id: when a client id is taken over,
 * the old connection's disconnect must not remove the new connection's rules
 * (nor the new one's authenticate replace the old one's while it still runs).
 */
export function connectionKey (client: ClientInfo): string {
  return `${client.clientId}\n${client.protocol}\n${client.ipAddress}\n${client.port}`
}

/** How long rules wait for their client to finish CONNECT before they are dropped. */
export const PENDING_TTL_MS = 60_000

/**
 * The rules of the connections this plugin allowed, by connectionKey. An
 * entry is pending from authenticate until client.connected and removed at
 * client.disconnected. A connection that closes between the two gets no
 * client.disconnected, so pending entries older than PENDING_TTL_MS are
 * dropped: the table holds at most the connected clients plus the
 * authentications of the last minute.
 */
export class AclTable {
  readonly #pending = new Map<string, { acl: TokenAcl, at: number }>() // oldest first
  readonly #connected = new Map<string, TokenAcl>()

  constructor (private readonly now: () => number = Date.now) {}

  get size (): number {
    return this.#pending.size + this.#connected.size
  }

  /** A connection was allowed, with or without rules. */
  authenticated (key: string, acl: TokenAcl | undefined): void {
    const expired = this.now() - PENDING_TTL_MS
    for (const [k, entry] of this.#pending) {
      if (entry.at > expired) break
      this.#pending.delete(k)
    }
    this.disconnected(key)
    if (acl !== undefined) this.#pending.set(key, { acl, at: this.now() })
  }

  connected (key: string): void {
    const entry = this.#pending.get(key)
    if (entry === undefined) return
    this.#pending.delete(key)
    this.#connected.set(key, entry.acl)
  }

  disconnected (key: string): void {
    this.#pending.delete(key)
    this.#connected.delete(key)
  }

  get (key: string): TokenAcl | undefined {
    return this.#connected.get(key) ?? this.#pending.get(key)?.acl
  }

  clear (): void {
    this.#pending.clear()
    this.#connected.clear()
  }
}
