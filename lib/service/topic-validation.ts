// Topic names and filters as an operation receives them (publish, subscribe
// on behalf of a client): checked before they reach the engine.

/** A topic name: not empty, no wildcard, no NUL. */
export function validTopicName (topic: string): boolean {
  return topic !== '' && !/[+#]/.test(topic) && !topic.includes('\u0000')
}

/** A topic filter: not empty, no NUL, `+` a whole level, `#` a whole last level. */
export function validTopicFilter (filter: string): boolean {
  if (filter === '' || filter.includes('\u0000')) return false
  const levels = filter.split('/')
  return levels.every((level, i) => (!level.includes('+') || level === '+') && (!level.includes('#') || (level === '#' && i === levels.length - 1)))
}
