// [MQTT-4.7.2-1] A filter starting with a wildcard (`#`, `+/…`) must not
// match topics starting with `$`. Aedes applies the rule to live messages,
// but the retained messages it sends on SUBSCRIBE come from the store's
// pattern match, which does not: with the node's retained
// `$SYS/brokers/<node>/version` etc. (SPEC §6), a client subscribing to `#`
// would receive them. This filters the store's retained stream for such
// subscriptions: a `$` topic passes only when one of the SUBSCRIBE's filters
// that does not start with a wildcard matches it. Runs once per SUBSCRIBE
// that has retained messages to send, never per published message.
import type { Aedes } from 'aedes'
import type { Readable } from 'node:stream'
import { enginePersistence } from '../engine/internals.js'
import { topicMatches } from '../access/acl-match.js'

interface RetainedStreams { createRetainedStreamCombi: (patterns: string[]) => Readable }

const startsWithWildcard = (filter: string): boolean => filter.startsWith('#') || filter.startsWith('+')

/** Wraps the engine's retained-message stream; returns undo. */
export function guardDollarRetained (engine: Aedes): () => void {
  const persistence = enginePersistence<RetainedStreams>(engine)
  const combi = persistence.createRetainedStreamCombi
  persistence.createRetainedStreamCombi = function (patterns) {
    const stream = combi.call(persistence, patterns)
    if (!patterns.some(startsWithWildcard)) return stream
    const literal = patterns.filter((p) => !startsWithWildcard(p))
    return stream.filter((packet: { topic: string }) =>
      packet.topic.charCodeAt(0) !== 36 || literal.some((p) => topicMatches(p, packet.topic)))
  }
  return () => { persistence.createRetainedStreamCombi = combi }
}
