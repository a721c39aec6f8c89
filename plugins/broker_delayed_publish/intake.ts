// The `message.publish` handler: a message to `$delayed/<seconds>/<topic>` is
// checked (form, then the publisher's right to publish to <topic>, then the
// node's limit), stored and stopped there; its publisher gets PUBACK/PUBREC
// 0x00 (MQTT 5), or the refusal's reason code: 0x99 malformed, 0x87 not
// authorized, 0x97 over delayed.max_delayed_messages, 0x80 not stored. An
// MQTT 3.x publisher gets its usual acknowledgement either way; a refused
// message is dropped and logged. Any other topic passes untouched, with no
// promise made.
import type { Logger, PublishAnswer, PublishMessage, PublishProperties } from '../../lib/plugin-kit/index.js'
import type { DelayedMessages } from './keeper.js'
import type { DelayedMessage } from './record.js'
import { isDelayed, isSysTopic, parseDelayed } from './topic.js'

export const REASON = { taken: 0x00, unspecified: 0x80, notAuthorized: 0x87, quotaExceeded: 0x97, malformed: 0x99 } as const

/** Refusals are logged at most once per window, with how many were not. */
const LOG_WINDOW_MS = 10_000

/** `taken()` counts each message taken in (the metric messages/delayed). */
export function delayedIntake (messages: DelayedMessages, node: string, logger: Logger, taken: () => void): (message: PublishMessage) => PublishAnswer | Promise<PublishAnswer> {
  let windowStart = 0
  let unlogged = 0
  const refuse = (message: PublishMessage, code: number, why: string): PublishAnswer => {
    const now = Date.now()
    if (now - windowStart >= LOG_WINDOW_MS) {
      logger.warn({ clientId: message.client?.clientId, topic: message.topic.slice(0, 256), reasonCode: code, why, ...(unlogged > 0 ? { alsoRefused: unlogged } : {}) }, 'delayed message refused; dropped')
      windowStart = now
      unlogged = 0
    } else {
      unlogged++
    }
    return { stop: code, reason: why }
  }

  const store = async (message: PublishMessage, topic: string, delay: number): Promise<PublishAnswer> => {
    const now = Date.now()
    const mountpoint = message.client?.mountpoint ?? ''
    const delayed: DelayedMessage = {
      topic: mountpoint + topic,
      payload: message.payload,
      qos: message.qos,
      retain: message.retain,
      properties: kept(message.properties),
      fromClientId: message.client?.clientId,
      fromUsername: message.client?.username,
      node,
      delay,
      publishAt: now,
      expectedAt: now + delay * 1000
    }
    try {
      if (await messages.takeIn(delayed) === 'quota') return refuse(message, REASON.quotaExceeded, 'delayed.max_delayed_messages reached')
    } catch (err) {
      logger.error({ err, clientId: message.client?.clientId, topic }, 'delayed message not stored')
      return { stop: REASON.unspecified, reason: 'not stored' }
    }
    taken()
    return { stop: REASON.taken }
  }

  return (message) => {
    if (!isDelayed(message.topic)) return undefined
    const parsed = parseDelayed(message.topic)
    if (!parsed.ok) return refuse(message, REASON.malformed, parsed.why)
    const { topic, delay } = parsed
    if (isSysTopic(topic)) return refuse(message, REASON.notAuthorized, '$SYS topics are reserved for the broker')
    const allowed = message.authorize(topic)
    if (allowed === false) return refuse(message, REASON.notAuthorized, `not authorized to publish to ${topic}`)
    if (allowed === true) return store(message, topic, delay)
    return allowed.then(
      async (allow) => allow ? await store(message, topic, delay) : refuse(message, REASON.notAuthorized, `not authorized to publish to ${topic}`),
      () => refuse(message, REASON.notAuthorized, 'the publish check failed'))
  }
}

/** The properties a delayed message carries on (a topic alias belongs to the connection, not the message). */
function kept (properties: PublishProperties | undefined): PublishProperties | undefined {
  if (properties === undefined) return undefined
  const { payloadFormatIndicator, messageExpiryInterval, contentType, responseTopic, correlationData, userProperties } = properties
  const out: PublishProperties = { payloadFormatIndicator, messageExpiryInterval, contentType, responseTopic, correlationData, userProperties }
  for (const key of Object.keys(out) as Array<keyof PublishProperties>) if (out[key] === undefined) delete out[key]
  return Object.keys(out).length === 0 ? undefined : out
}
