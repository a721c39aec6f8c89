// ACL rules that come from a database (SPEC §5.3.5–7, EMQ X 3.x
// emqx_auth_*_acl): each rule is compiled into the node's acl.conf rule form
// and matched by lib/access/acl-match.ts, so the semantics are the file's:
// first match decides, an allow rule must cover a requested filter, a deny
// rule applies when it overlaps it, `%u`/`%c` as whole levels, `eq <topic>`
// an exact literal match, ipaddr a CIDR.
import { checkAcl, compileTopicFilter, parseCidr, type AclRule as MatchRule, type AclTopic, type AclWho } from '../../access/acl-match.js'
import type { CheckAclRequest, Decision } from '../../hooks/types.js'

export interface AclRule {
  allow: boolean
  /** 1 subscribe, 2 publish, 3 pubsub */
  access: 1 | 2 | 3
  /** a topic filter, or `eq <topic>` for an exact match */
  topic: string
  /** an address or CIDR */
  ipaddr?: string
  /** `$all` matches every client (whatever the other subject columns say) */
  username?: string
  clientid?: string
}

const ACCESS = { 1: 'subscribe', 2: 'publish', 3: 'pubsub' } as const

function present (value: string | undefined): value is string {
  return value !== undefined && value !== ''
}

/** The subject of a rule; undefined when it can never match (no subject column set, or a bad address). */
function whoOf (rule: AclRule): AclWho | undefined {
  if (rule.username === '$all') return { kind: 'all' }
  const items: AclWho[] = []
  if (present(rule.ipaddr)) {
    const cidr = parseCidr(rule.ipaddr.trim())
    if (cidr === null) return undefined
    items.push({ kind: 'ipaddr', cidr })
  }
  if (present(rule.username)) items.push({ kind: 'user', name: rule.username })
  if (present(rule.clientid)) items.push({ kind: 'client', id: rule.clientid })
  if (items.length === 0) return undefined
  return items.length === 1 ? items[0] : { kind: 'and', items }
}

function topicOf (topic: string): AclTopic | undefined {
  if (topic.startsWith('eq ')) return topic.length > 3 ? { kind: 'eq', topic: topic.slice(3) } : undefined
  try {
    return compileTopicFilter(topic)
  } catch {
    return undefined
  }
}

/** The rules in the matcher's form; a rule that can never match (bad topic, address, access) is left out. */
export function compileRules (rules: readonly AclRule[], source = 'database'): MatchRule[] {
  const compiled: MatchRule[] = []
  rules.forEach((rule, index) => {
    const who = whoOf(rule)
    const topic = topicOf(rule.topic)
    const access = ACCESS[rule.access]
    if (who === undefined || topic === undefined || access === undefined) return
    compiled.push({ permission: rule.allow ? 'allow' : 'deny', who, access, topics: [topic], file: source, line: index + 1 })
  })
  return compiled
}

/** First matching rule decides; none → 'ignore' (the next plugin, then acl_nomatch). */
export function decideAcl (rules: readonly AclRule[], request: CheckAclRequest): Decision {
  const { client, access, topic } = request
  const decision = checkAcl(compileRules(rules), { clientId: client.clientId, username: client.username, ipAddress: client.ipAddress }, access, topic)
  return decision === 'nomatch' ? 'ignore' : decision
}

function text (value: unknown): string | undefined {
  if (value === null || value === undefined) return undefined
  if (Buffer.isBuffer(value)) return value.toString('utf8')
  return String(value)
}

function flag (value: unknown): boolean {
  const t = text(value)?.trim().toLowerCase()
  return t === '1' || t === 'true' || t === 't' || t === 'allow'
}

/**
 * One SQL `mqtt_acl` row (columns allow, ipaddr, username, clientid, access,
 * topic; numbers, strings or buffers as drivers return them) as a rule;
 * undefined for a row without a topic or with an access other than 1, 2, 3.
 */
export function aclRuleOfRow (row: Readonly<Record<string, unknown>>): AclRule | undefined {
  const topic = text(row.topic)
  const access = Number(text(row.access))
  if (topic === undefined || topic === '' || (access !== 1 && access !== 2 && access !== 3)) return undefined
  const rule: AclRule = { allow: flag(row.allow), access, topic }
  const ipaddr = text(row.ipaddr)
  const username = text(row.username)
  const clientid = text(row.clientid)
  if (ipaddr !== undefined) rule.ipaddr = ipaddr
  if (username !== undefined) rule.username = username
  if (clientid !== undefined) rule.clientid = clientid
  return rule
}
