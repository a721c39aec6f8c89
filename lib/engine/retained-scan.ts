// The retained messages a SUBSCRIBE gets, read in one scan of the store.
// aedes-persistence-level reads every retained message once per filter of the
// SUBSCRIBE (a scan and a decode each), so 10 000 filters were 10 000 scans.
// Here the filters go into one matcher and the store is read once; a message
// comes out once per filter it matches, as it did before.
import { createRequire } from 'node:module'
import { Readable } from 'node:stream'
import type { AedesPersistence, RetainedPacket } from './store.js'

const require = createRequire(import.meta.url)
interface Matcher { add: (filter: string, value: number) => unknown, match: (topic: string) => number[] }
// qlobber ships no types; these options are the level persistence's own
const { Qlobber } = require('qlobber') as { Qlobber: new (options: object) => Matcher }
const MATCH_OPTIONS = { wildcard_one: '+', wildcard_some: '#', separator: '/', match_empty_levels: true }

interface CombiPersistence extends AedesPersistence {
  createRetainedStreamCombi: (patterns: string[]) => NodeJS.ReadableStream
}

export function scanRetainedOnce (persistence: AedesPersistence): void {
  const p = persistence as CombiPersistence
  const combi = p.createRetainedStreamCombi.bind(p)
  p.createRetainedStreamCombi = (patterns) => {
    if (patterns.length < 2) return combi(patterns)
    const matcher = new Qlobber(MATCH_OPTIONS)
    patterns.forEach((pattern, i) => matcher.add(pattern, i))
    return Readable.from(matching(p.createRetainedStream('#') as AsyncIterable<RetainedPacket>, matcher))
  }
}

async function * matching (retained: AsyncIterable<RetainedPacket>, matcher: Matcher): AsyncGenerator<RetainedPacket> {
  for await (const packet of retained) {
    for (let n = matcher.match(packet.topic).length; n > 0; n--) yield packet
  }
}
