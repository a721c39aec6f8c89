// The topic filters of one SUBSCRIBE (or of `retainer clean <filter>`),
// matched against retained topics: all of them in one matcher (qlobber, the
// matcher Aedes uses), so a SUBSCRIBE with 10 000 filters reads the
// retained messages once, not once per filter. A filter starting with `+` or
// `#` does not match a topic starting with `$` [MQTT-4.7.2-1].
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
interface Matcher { add: (filter: string, value: number) => unknown, match: (topic: string) => number[] }
// qlobber ships no types; these options are Aedes' own
const { Qlobber } = require('qlobber') as { Qlobber: new (options: object) => Matcher }
const MATCH_OPTIONS = { wildcard_one: '+', wildcard_some: '#', separator: '/', match_empty_levels: true }

const isWildcard = (filter: string): boolean => filter.includes('+') || filter.includes('#')
const startsWithWildcard = (filter: string): boolean => filter.startsWith('+') || filter.startsWith('#')

/** A topic filter: not empty, no NUL, `+` a whole level, `#` a whole last level. */
export function validFilter (filter: string): boolean {
  if (filter === '' || filter.includes('\u0000')) return false
  const levels = filter.split('/')
  return levels.every((level, i) => (!level.includes('+') || level === '+') && (!level.includes('#') || (level === '#' && i === levels.length - 1)))
}

export class Filters {
  readonly #filters: readonly string[]
  readonly #matcher: Matcher | undefined
  /** every filter is a topic name: each can be looked up, nothing needs scanning */
  readonly literal: boolean

  constructor (filters: readonly string[]) {
    this.#filters = filters
    this.literal = !filters.some(isWildcard)
    if (!this.literal) {
      const matcher = new Qlobber(MATCH_OPTIONS)
      filters.forEach((filter, i) => matcher.add(filter, i))
      this.#matcher = matcher
    }
  }

  /** The filters, when every one is a topic name (each names the one topic it matches). */
  get topics (): readonly string[] {
    return this.#filters
  }

  /** How many of the filters match `topic` (a retained message is sent once per matching filter). */
  count (topic: string): number {
    if (this.#matcher === undefined) return this.#filters.reduce((n, filter) => n + (filter === topic ? 1 : 0), 0)
    const matched = this.#matcher.match(topic)
    if (topic.charCodeAt(0) !== 36 /* $ */) return matched.length
    return matched.filter((i) => !startsWithWildcard(this.#filters[i])).length
  }
}
