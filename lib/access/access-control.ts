// The ACL chain (SPEC §5.3): a superuser passes; otherwise a cached answer,
// else the plugins' `client.check_acl` handlers in chain order, then the rules
// of mqtt.acl_file, then mqtt.acl_nomatch. The answer is cached per client
// when mqtt.cache_acl is on (bounded by mqtt.acl_cache_max_size, trusted for
// mqtt.acl_cache_ttl). The check is synchronous, with no promise on the
// publish path, unless a plugin handler answers with a promise (lib/hooks/chain.ts).
import { isAbsolute, resolve } from 'node:path'
import type { Config } from '../config/store.js'
import { runChain, type ChainRules } from '../hooks/chain.js'
import type { HookRegistry } from '../hooks/registry.js'
import type { AclAccess, CheckAclRequest, ClientInfo, Decision } from '../hooks/types.js'
import type { Logger } from '../log.js'
import { loadAclFile } from './acl-file.js'
import { checkAcl, type AclRule } from './acl-match.js'
import type { ClientState } from './client-state.js'

/** `$share/<group>/<filter>` and `$queue/<filter>` are checked as `<filter>`. */
export function unsharedFilter (filter: string): string {
  if (filter.startsWith('$queue/')) return filter.slice(7)
  if (filter.startsWith('$share/')) {
    const slash = filter.indexOf('/', 7)
    return slash < 0 ? filter : filter.slice(slash + 1)
  }
  return filter
}

export class AccessControl {
  #rules: AclRule[] = []
  /** a handler's error is logged and taken as an ignore; when all ignore, the file rules decide */
  readonly #chain: ChainRules<CheckAclRequest, Decision, boolean, undefined> = {
    decide: (decision) => decision === 'ignore' ? undefined : decision === 'allow',
    failed: (err, request) => {
      this.logger.error({ err, clientId: request.client.clientId, topic: request.topic }, 'ACL handler failed; treated as ignore')
      return undefined
    },
    fallback: (request) => this.#fromFile(request.client, request.access, request.topic)
  }

  constructor (
    private readonly config: Config,
    private readonly hooks: HookRegistry,
    private readonly root: string,
    private readonly logger: Logger
  ) {}

  get rules (): readonly AclRule[] {
    return this.#rules
  }

  /** (Re)reads mqtt.acl_file; on error the rules in force stay and the error (naming file:line) is thrown. */
  async reload (): Promise<number> {
    const file = this.config.get('mqtt.acl_file')
    this.#rules = await loadAclFile(isAbsolute(file) ? file : resolve(this.root, file))
    this.logger.info({ file, rules: this.#rules.length }, 'ACL rules loaded')
    return this.#rules.length
  }

  check (state: ClientState, access: AclAccess, topic: string): boolean | Promise<boolean> {
    if (state.info.isSuperuser) return true
    const caching = this.config.get('mqtt.cache_acl')
    if (caching) {
      const hit = state.aclCache.get(access, topic)
      if (hit !== undefined && hit.expiresAt > Date.now()) return hit.allow
    }
    // a plugin being swapped (broker_reloader) holds the chain: without its handlers acl.conf would decide
    const held = this.hooks.held('client.check_acl')
    if (held !== undefined) return held.then(() => this.check(state, access, topic))
    const checked = access === 'subscribe' ? unsharedFilter(topic) : topic
    if (!this.hooks.has('client.check_acl')) {
      return this.#remember(state, access, topic, caching, this.#fromFile(state.info, access, checked))
    }
    const allowed = runChain(this.hooks.handlers('client.check_acl'), { client: state.info, access, topic: checked }, this.#chain, undefined)
    if (typeof allowed === 'boolean') return this.#remember(state, access, topic, caching, allowed)
    return allowed.then((allow) => this.#remember(state, access, topic, caching, allow))
  }

  /** Forgets one topic's cached answers (both actions), or all of them. */
  cleanCache (state: ClientState, topic?: string): void {
    if (topic === undefined) {
      state.aclCache.clear()
      return
    }
    state.aclCache.delete('publish', topic)
    state.aclCache.delete('subscribe', topic)
  }

  #fromFile (client: ClientInfo, access: AclAccess, topic: string): boolean {
    const decision = checkAcl(this.#rules, client, access, topic)
    return decision === 'nomatch' ? this.config.get('mqtt.acl_nomatch') === 'allow' : decision === 'allow'
  }

  #remember (state: ClientState, access: AclAccess, topic: string, caching: boolean, allow: boolean): boolean {
    if (caching) {
      state.aclCache.set(access, topic, allow, Date.now() + this.config.get('mqtt.acl_cache_ttl'), this.config.get('mqtt.acl_cache_max_size'))
    }
    return allow
  }
}
