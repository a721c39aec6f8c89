// ACL documents (SPEC §5.3.7): `{username, clientid, publish: [...],
// subscribe: [...], pubsub: [...]}`. The documents the ACL selectors find
// list what the client MAY do, as in EMQ X 3.x emqx_acl_mongo:
// - no document → ignore (the next plugin, then acl.conf, then acl_nomatch);
// - documents, and a listed topic matches → allow;
// - documents, and none matches → deny (the lists are the client's whole
//   allowance — unlike the SQL plugins, whose rows may say allow or deny);
// - a user name starting with `$` is not checked here (ignore), as in EMQ X.
// Server down or slow → `unavailable.acl` (ignore by default).
//
// `%u` / `%c` as a whole topic level are compared literally with the user
// name / client id by the node's matcher (lib/access/acl-match.ts). Inside a
// level (`dev-%c/in`) they are filled in here, and a topic whose filled-in
// level would hold `+`, `#` or `/` is left out, so a client cannot widen a
// rule by naming itself `#`.
import type { Document } from 'mongodb'
import { decideAcl, isLevelValue, valuesOf, type AclRule, type BackendGuard, type Decision, type HookHandlers, type Logger, type QueryValues, type UnavailableAcl } from '../../lib/plugin-kit/index.js'

const LISTS = Object.freeze([['subscribe', 1], ['publish', 2], ['pubsub', 3]] as const)

function fillLevel (level: string, values: QueryValues): string | undefined {
  if (level === '%u' || level === '%c' || !/%[uc]/.test(level)) return level
  let unsafe = false
  const filled = level.replace(/%[uc]/g, (v) => {
    const value = v === '%u' ? values.username : values.clientId
    if (!isLevelValue(value)) unsafe = true
    return value ?? ''
  })
  return unsafe ? undefined : filled
}

/** A listed topic with `%u`/`%c` inside levels filled in; undefined when it cannot be filled safely. */
export function fillTopic (topic: string, values: QueryValues): string | undefined {
  const levels = topic.split('/').map((level) => fillLevel(level, values))
  return levels.some((l) => l === undefined) ? undefined : levels.join('/')
}

function topicsOf (value: unknown): string[] {
  if (typeof value === 'string') return [value]
  return Array.isArray(value) ? value.filter((t): t is string => typeof t === 'string' && t !== '') : []
}

/** The allow rules of the documents (the query selected them for this client, so each rule applies to it). */
export function rulesOf (docs: readonly Document[], values: QueryValues): AclRule[] {
  const rules: AclRule[] = []
  for (const doc of docs) {
    for (const [list, access] of LISTS) {
      for (const listed of topicsOf(doc[list])) {
        const topic = fillTopic(listed, values)
        if (topic !== undefined) rules.push({ allow: true, access, topic, username: '$all' })
      }
    }
  }
  return rules
}

export interface MongoAclDeps {
  guard: BackendGuard
  documents: (values: QueryValues) => Promise<Document[]>
  unavailable: UnavailableAcl
  logger: Logger
}

export function mongoAclChecker (deps: MongoAclDeps): HookHandlers['client.check_acl'] {
  return async (request): Promise<Decision> => {
    try {
      if (request.client.username?.startsWith('$') === true) return 'ignore'
      const values = valuesOf(request.client)
      const found = await deps.guard.run(() => deps.documents(values))
      if (!found.ok) return deps.unavailable
      if (found.value.length === 0) return 'ignore'
      return decideAcl(rulesOf(found.value, values), request) === 'allow' ? 'allow' : 'deny'
    } catch (err) {
      deps.logger.error({ err, clientId: request?.client?.clientId, topic: request?.topic }, 'MongoDB ACL check failed; ignored')
      return 'ignore'
    }
  }
}
