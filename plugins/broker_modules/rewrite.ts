// The rewrite module (EMQ X emqx_mod_rewrite): `<filter> <regex> <dest>`
// rules. The first rule whose filter matches the topic decides: when its
// regex matches too, the topic becomes `dest` with `$1`, `$2` … replaced by
// the regex's groups; when it does not, the topic stays as it is (EMQ X: no
// further rule is tried). Publish topics and subscribe/unsubscribe filters
// are rewritten alike; a shared subscription's `$share/<group>/` or
// `$queue/` prefix is kept and the filter behind it rewritten.
import { topicMatches, validTopicFilter, validTopicName } from '../../lib/plugin-kit/index.js'

export interface RewriteRule {
  /** the rule as written, for logs */
  text: string
  filter: string
  /** the regex source (JSON-comparable: a changed rule reloads the plugin) */
  pattern: string
  dest: string
  regex: RegExp
}

/** A topic longer than this (UTF-8 bytes) cannot be written in an MQTT packet. */
const MAX_TOPIC_BYTES = 65535
const GROUP_REF = /\$(\d+)/g

/** Parses `<filter> <regex> <dest>`; throws an Error saying what is wrong. `publishOnly`: the dest may hold no wildcard. */
export function parseRule (text: string, publishOnly = false): RewriteRule {
  const fields = text.trim().split(/\s+/)
  if (fields.length !== 3 || fields[0] === '') {
    throw new Error(`expected "<topic filter> <regex> <dest>", got ${fields[0] === '' ? 'nothing' : `${fields.length} field${fields.length === 1 ? '' : 's'}`}`)
  }
  const [filter, pattern, dest] = fields
  if (!validTopicFilter(filter)) throw new Error(`not a topic filter: ${filter}`)
  let regex: RegExp
  try {
    // `u`: groups never split a character in two (a half surrogate is no UTF-8 topic)
    regex = new RegExp(pattern, 'u')
  } catch (err) {
    throw new Error(`bad regex ${pattern}: ${(err as Error).message.replace(/^Invalid regular expression: /, '')}`, { cause: err })
  }
  const groups = groupCount(regex)
  for (const [ref, digits] of dest.matchAll(GROUP_REF)) {
    const n = Number(digits)
    if (n < 1 || n > groups) throw new Error(`dest ${dest} refers to ${ref} but the regex has ${groups} group${groups === 1 ? '' : 's'}`)
  }
  const plain = dest.replace(GROUP_REF, 'x')
  if (!validTopicFilter(plain)) throw new Error(`dest is not a topic filter: ${dest}`)
  if (publishOnly && !validTopicName(plain)) throw new Error(`dest of a publish rule may hold no wildcard: ${dest}`)
  return { text: `${filter} ${pattern} ${dest}`, filter, pattern, dest, regex }
}

/** How many capturing groups a regex has (an empty alternative always matches). */
function groupCount (regex: RegExp): number {
  return new RegExp(`${regex.source}|`, regex.flags).exec('')!.length - 1
}

/** What a rewrite did: the new topic, or why the rule's result was not used. */
export type Rewritten =
  | { topic: string, rule: RewriteRule }
  | { refused: string, rule: RewriteRule, result: string }

/**
 * The topic the rules make of `topic`, or undefined when no rule changes it.
 * `name`: a publish topic (the result may hold no wildcard), else a filter.
 */
export function rewrite (rules: readonly RewriteRule[], topic: string, name: boolean): Rewritten | undefined {
  if (rules.length === 0) return undefined
  const [prefix, inner] = name ? ['', topic] : splitShared(topic)
  for (const rule of rules) {
    if (!topicMatches(rule.filter, inner)) continue
    const match = rule.regex.exec(inner)
    if (match === null) return undefined
    const result = rule.dest.replace(GROUP_REF, (_ref, digits: string) => match[Number(digits)] ?? '')
    if (result === inner) return undefined
    const whole = prefix + result
    if (Buffer.byteLength(whole) > MAX_TOPIC_BYTES) return { refused: 'longer than 65535 bytes', rule, result: whole }
    if (name && !validTopicName(result)) return { refused: 'not a topic name (a wildcard, or empty)', rule, result }
    if (!name && !validTopicFilter(result)) return { refused: 'not a topic filter', rule, result: whole }
    return { topic: whole, rule }
  }
  return undefined
}

/** `$share/<group>/` or `$queue/` and the filter behind it; `['', filter]` for any other filter. */
function splitShared (filter: string): [string, string] {
  if (filter.startsWith('$queue/')) return ['$queue/', filter.slice(7)]
  if (filter.startsWith('$share/')) {
    const slash = filter.indexOf('/', 7)
    if (slash > 7) return [filter.slice(0, slash + 1), filter.slice(slash + 1)]
  }
  return ['', filter]
}
