// The topic a message had before `message.publish` changed it, kept with the
// packet the engine routes (and emits as `publish`) so that `broker_ctl trace`
// can show both (lib/trace/tracer.ts). Recorded only when a fold changed the
// topic; the entry goes with the packet.
const originals = new WeakMap<object, string>()

export function noteTopicRewrite (packet: object, before: string, after: string): void {
  if (before !== after) originals.set(packet, before)
}

/** The topic the publisher wrote, when a `message.publish` handler rewrote it; undefined otherwise. */
export function topicBeforeRewrite (packet: object): string | undefined {
  return originals.get(packet)
}
