// How a retained message is written in the plugin's store (one key per
// topic, the value a JSON text) and read back. What is read back is checked
// as if it came from outside: a value that is not exactly what `encode`
// writes is refused with the reason, so one damaged entry is skipped (and
// logged by the caller), never delivered and never a crash.
import type { RetainedMessage } from '../../lib/plugin-kit/index.js'

/** The stored form: QoS, payload (base64), expiry (ms since the epoch), properties. */
interface Entry {
  q: 0 | 1 | 2
  p: string
  x?: number
  pr?: EncodedProperties
}

interface EncodedProperties {
  payloadFormatIndicator?: boolean
  contentType?: string
  responseTopic?: string
  /** base64 */
  correlationData?: string
  userProperties?: Record<string, string | string[]>
}

const MAX_TOPIC_BYTES = 65535
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

/** A topic a retained message can have: a topic name (no wildcard, no NUL, not empty, at most 65535 bytes), not the node's own `$SYS/`. */
export function validTopic (topic: string): boolean {
  return topic !== '' && !/[+#]/.test(topic) && !topic.includes('\u0000') && !topic.startsWith('$SYS/') && Buffer.byteLength(topic) <= MAX_TOPIC_BYTES
}

export function encode (message: RetainedMessage): string {
  const entry: Entry = { q: message.qos, p: message.payload.toString('base64') }
  if (message.expiresAt !== undefined) entry.x = message.expiresAt
  const properties = encodeProperties(message.properties)
  if (properties !== undefined) entry.pr = properties
  return JSON.stringify(entry)
}

function encodeProperties (properties: Record<string, unknown> | undefined): EncodedProperties | undefined {
  if (properties === undefined) return undefined
  const out: EncodedProperties = {}
  const { payloadFormatIndicator, contentType, responseTopic, correlationData, userProperties } = properties
  if (typeof payloadFormatIndicator === 'boolean') out.payloadFormatIndicator = payloadFormatIndicator
  if (typeof contentType === 'string') out.contentType = contentType
  if (typeof responseTopic === 'string') out.responseTopic = responseTopic
  if (Buffer.isBuffer(correlationData)) out.correlationData = correlationData.toString('base64')
  if (isUserProperties(userProperties)) out.userProperties = userProperties
  return Object.keys(out).length > 0 ? out : undefined
}

function isUserProperties (value: unknown): value is Record<string, string | string[]> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  return Object.values(value).every((v) => typeof v === 'string' || (Array.isArray(v) && v.every((s) => typeof s === 'string')))
}

function base64 (text: unknown): Buffer | undefined {
  return typeof text === 'string' && text.length % 4 === 0 && BASE64.test(text) ? Buffer.from(text, 'base64') : undefined
}

/** The message a stored value holds, or why it is not one. */
export function decode (topic: string, text: string): RetainedMessage | string {
  if (!validTopic(topic)) return 'not a topic name a retained message can have'
  let entry: unknown
  try {
    entry = JSON.parse(text)
  } catch {
    return 'not JSON'
  }
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return 'not a JSON object'
  const { q, p, x, pr, ...rest } = entry as Record<string, unknown>
  if (Object.keys(rest).length > 0) return `unknown fields ${Object.keys(rest).join(', ')}`
  if (q !== 0 && q !== 1 && q !== 2) return 'no QoS 0, 1 or 2'
  const payload = base64(p)
  if (payload === undefined || payload.length === 0) return 'no payload (base64, not empty)'
  if (x !== undefined && !(typeof x === 'number' && Number.isSafeInteger(x) && x >= 0)) return 'an expiry that is not a time'
  const message: RetainedMessage = { topic, payload, qos: q }
  if (x !== undefined) message.expiresAt = x
  if (pr !== undefined) {
    const properties = decodeProperties(pr)
    if (typeof properties === 'string') return properties
    message.properties = properties
  }
  return message
}

function decodeProperties (value: unknown): Record<string, unknown> | string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'properties that are not an object'
  const { payloadFormatIndicator, contentType, responseTopic, correlationData, userProperties, ...rest } = value as Record<string, unknown>
  if (Object.keys(rest).length > 0) return `unknown properties ${Object.keys(rest).join(', ')}`
  const out: Record<string, unknown> = {}
  if (payloadFormatIndicator !== undefined) {
    if (typeof payloadFormatIndicator !== 'boolean') return 'a payload format indicator that is not a boolean'
    out.payloadFormatIndicator = payloadFormatIndicator
  }
  for (const [name, text] of [['contentType', contentType], ['responseTopic', responseTopic]] as const) {
    if (text === undefined) continue
    if (typeof text !== 'string') return `a ${name} that is not a string`
    out[name] = text
  }
  if (correlationData !== undefined) {
    const data = base64(correlationData)
    if (data === undefined) return 'correlation data that is not base64'
    out.correlationData = data
  }
  if (userProperties !== undefined) {
    if (!isUserProperties(userProperties)) return 'user properties that are not names with text values'
    out.userProperties = userProperties
  }
  return out
}
