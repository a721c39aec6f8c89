// `$delayed/<seconds>/<topic>`: what a publisher asks for. The seconds are a
// whole number from 0 to 4294967 (EMQ X's limit, about 49.7 days); the topic
// is a topic name (no wildcard, not empty).

export const DELAYED_PREFIX = '$delayed/'
/** the longest delay, in seconds (EMQ X: 4294967) */
export const MAX_DELAY_S = 4294967

export type DelayedTopic =
  | { ok: true, delay: number, topic: string }
  | { ok: false, why: string }

/** Whether a topic asks for a delay at all; only such topics are parsed. */
export function isDelayed (topic: string): boolean {
  return topic.startsWith(DELAYED_PREFIX)
}

/** `$delayed/10/a/b` → 10 s, `a/b`; a malformed one says why. */
export function parseDelayed (topic: string): DelayedTopic {
  const rest = topic.slice(DELAYED_PREFIX.length)
  const slash = rest.indexOf('/')
  if (slash < 0) return { ok: false, why: 'no topic after the delay ($delayed/<seconds>/<topic>)' }
  const seconds = rest.slice(0, slash)
  if (!/^[0-9]{1,7}$/.test(seconds)) return { ok: false, why: `the delay ${JSON.stringify(seconds.slice(0, 32))} is not a whole number of seconds from 0 to ${MAX_DELAY_S}` }
  const delay = Number(seconds)
  if (delay > MAX_DELAY_S) return { ok: false, why: `the delay ${delay} s is over ${MAX_DELAY_S} s` }
  const inner = rest.slice(slash + 1)
  const why = topicNameFault(inner)
  if (why !== undefined) return { ok: false, why }
  if (isDelayed(inner) || inner === '$delayed') return { ok: false, why: 'a delayed message cannot be delayed again' }
  return { ok: true, delay, topic: inner }
}

/** Why `topic` is not a topic name a message may be published to; undefined when it is one. */
export function topicNameFault (topic: string): string | undefined {
  if (topic === '') return 'the topic is empty'
  if (/[+#]/.test(topic)) return 'the topic holds a wildcard (+ or #)'
  if (topic.includes('\u0000')) return 'the topic holds U+0000'
  if (Buffer.byteLength(topic) > 65535) return 'the topic is longer than 65535 bytes'
  return undefined
}

/** `$SYS/…` is the node's own: no client publishes there, delayed or not. */
export function isSysTopic (topic: string): boolean {
  return topic.startsWith('$SYS')
}
