// A delayed message as the plugin store keeps it: the key is its id, the
// value this record as JSON (payload and correlation data in base64). The id
// starts with the time it is due (12 hex digits of ms since the epoch), so the
// store's key order is the order messages fall due. What is read back is
// checked again: a record that does not decode to a publishable message is
// refused (and only logged by the caller).
import { randomUUID } from 'node:crypto'
import type { PublishProperties } from '../../lib/plugin-kit/index.js'
import { MAX_DELAY_S, topicNameFault } from './topic.js'

/** A message waiting to be published. */
export interface DelayedMessage {
  /** the topic it is published to (under the publisher's mountpoint) */
  topic: string
  payload: Buffer
  qos: 0 | 1 | 2
  retain: boolean
  /** MQTT 5 properties it carries on; its expiry interval counts from `publishAt` */
  properties?: PublishProperties
  /** who published it (for the record) */
  fromClientId?: string
  fromUsername?: string
  /** the node that owns it: only that node publishes it */
  node: string
  /** the delay asked for, seconds */
  delay: number
  /** when it was taken in, ms since the epoch */
  publishAt: number
  /** when it falls due, ms since the epoch */
  expectedAt: number
}

/** The stored form (v: 1). */
interface StoredRecord {
  v: 1
  topic: string
  payload: string
  qos: 0 | 1 | 2
  retain: boolean
  properties?: Omit<PublishProperties, 'correlationData'> & { correlationData?: string }
  from_clientid?: string
  from_username?: string
  node: string
  delay: number
  publish_at: number
  expected_at: number
}

/** 12 hex digits of the due time, 12 random ones */
const ID = /^[0-9a-f]{24}$/
const DUE_DIGITS = 12
/** 2^48 ms: the latest due time 12 hex digits hold (year 10889) */
const LATEST = 2 ** 48 - 1

/** A new id for a message due at `expectedAt`. */
export function newId (expectedAt: number): string {
  // randomUUID draws from a cached pool (randomBytes is a call into OpenSSL each time): its first 12 hex digits but the dash are random
  const uuid = randomUUID()
  return expectedAt.toString(16).padStart(DUE_DIGITS, '0') + uuid.slice(0, 8) + uuid.slice(9, 13)
}

/** When the message with this id falls due (ms since the epoch). */
export function dueOf (id: string): number {
  return parseInt(id.slice(0, DUE_DIGITS), 16)
}

export function isId (id: string): boolean {
  return ID.test(id)
}

const KEYS: readonly string[] = Object.freeze(['v', 'topic', 'payload', 'qos', 'retain', 'properties', 'from_clientid', 'from_username', 'node', 'delay', 'publish_at', 'expected_at'])
const PROPERTY_KEYS: readonly string[] = Object.freeze(['payloadFormatIndicator', 'messageExpiryInterval', 'contentType', 'responseTopic', 'correlationData', 'userProperties'])
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)
const isWhole = (value: unknown, max: number): value is number => Number.isInteger(value) && (value as number) >= 0 && (value as number) <= max
const isBase64 = (value: unknown): value is string => typeof value === 'string' && BASE64.test(value)
const unknownKey = (record: Record<string, unknown>, known: readonly string[]): string | undefined => Object.keys(record).find((key) => !known.includes(key))

/**
 * Why a value read back is not a stored record; undefined when it is one.
 * Written out rather than a schema: a node with a million messages checks
 * each when it loads (about 1 µs each, a Joi schema took 20).
 */
function fault (record: unknown): string | undefined {
  if (!isObject(record)) return 'not an object'
  const extra = unknownKey(record, KEYS)
  if (extra !== undefined) return `unknown field ${JSON.stringify(extra.slice(0, 64))}`
  if (record.v !== 1) return 'v is not 1'
  if (typeof record.topic !== 'string') return 'topic is not a string'
  const topicFault = topicNameFault(record.topic)
  if (topicFault !== undefined) return `topic: ${topicFault}`
  if (!isBase64(record.payload)) return 'payload is not base64'
  if (record.qos !== 0 && record.qos !== 1 && record.qos !== 2) return 'qos is not 0, 1 or 2'
  if (typeof record.retain !== 'boolean') return 'retain is not true or false'
  if (record.properties !== undefined) {
    const why = propertiesFault(record.properties)
    if (why !== undefined) return `properties: ${why}`
  }
  for (const key of ['from_clientid', 'from_username'] as const) if (record[key] !== undefined && typeof record[key] !== 'string') return `${key} is not a string`
  if (typeof record.node !== 'string' || record.node === '') return 'node is not a node name'
  if (!isWhole(record.delay, MAX_DELAY_S)) return `delay is not a whole number of seconds up to ${MAX_DELAY_S}`
  if (!isWhole(record.publish_at, LATEST)) return 'publish_at is not a time'
  if (!isWhole(record.expected_at, LATEST)) return 'expected_at is not a time'
  return undefined
}

function propertiesFault (properties: unknown): string | undefined {
  if (!isObject(properties)) return 'not an object'
  const extra = unknownKey(properties, PROPERTY_KEYS)
  if (extra !== undefined) return `unknown property ${JSON.stringify(extra.slice(0, 64))}`
  const { payloadFormatIndicator, messageExpiryInterval, contentType, responseTopic, correlationData, userProperties } = properties
  if (payloadFormatIndicator !== undefined && typeof payloadFormatIndicator !== 'boolean') return 'payloadFormatIndicator is not true or false'
  if (messageExpiryInterval !== undefined && !isWhole(messageExpiryInterval, 2 ** 32 - 1)) return 'messageExpiryInterval is not a whole number of seconds'
  if (contentType !== undefined && typeof contentType !== 'string') return 'contentType is not a string'
  if (responseTopic !== undefined && (typeof responseTopic !== 'string' || topicNameFault(responseTopic) !== undefined)) return 'responseTopic is not a topic name'
  if (correlationData !== undefined && !isBase64(correlationData)) return 'correlationData is not base64'
  if (userProperties !== undefined) {
    if (!isObject(userProperties)) return 'userProperties is not an object'
    const isText = (v: unknown): boolean => typeof v === 'string'
    if (!Object.values(userProperties).every((v) => isText(v) || (Array.isArray(v) && v.every(isText)))) return 'userProperties values are not strings'
  }
  return undefined
}

export function encode (message: DelayedMessage): string {
  const record: StoredRecord = {
    v: 1,
    topic: message.topic,
    payload: message.payload.toString('base64'),
    qos: message.qos,
    retain: message.retain,
    properties: storedProperties(message.properties),
    from_clientid: message.fromClientId,
    from_username: message.fromUsername,
    node: message.node,
    delay: message.delay,
    publish_at: message.publishAt,
    expected_at: message.expectedAt
  }
  return JSON.stringify(record)
}

/** The message stored under `id`, or why it cannot be one. */
export function decode (id: string, value: string): { message: DelayedMessage } | { why: string } {
  if (!isId(id)) return { why: 'the key is not a delayed message id' }
  let parsed: unknown
  try {
    parsed = JSON.parse(value)
  } catch {
    return { why: 'not JSON' }
  }
  const why = fault(parsed)
  if (why !== undefined) return { why }
  const record = parsed as StoredRecord
  if (record.expected_at !== dueOf(id)) return { why: 'the id does not match the due time' }
  if (record.expected_at < record.publish_at) return { why: 'due before it was taken in' }
  const { correlationData, ...properties } = record.properties ?? {}
  return {
    message: {
      topic: record.topic,
      payload: Buffer.from(record.payload, 'base64'),
      qos: record.qos,
      retain: record.retain,
      properties: record.properties === undefined ? undefined : { ...properties, ...(correlationData === undefined ? {} : { correlationData: Buffer.from(correlationData, 'base64') }) },
      fromClientId: record.from_clientid,
      fromUsername: record.from_username,
      node: record.node,
      delay: record.delay,
      publishAt: record.publish_at,
      expectedAt: record.expected_at
    }
  }
}

function storedProperties (properties: PublishProperties | undefined): StoredRecord['properties'] {
  if (properties === undefined) return undefined
  const { correlationData, ...rest } = properties
  return { ...rest, ...(correlationData === undefined ? {} : { correlationData: correlationData.toString('base64') }) }
}

/**
 * The properties to publish with at `now`: the expiry interval is what is
 * left of it since the message was taken in; undefined when it expired.
 */
export function propertiesAt (message: DelayedMessage, now: number): { properties?: PublishProperties } | undefined {
  const properties = message.properties
  // 0 is no expiry, as the engine reads it
  const interval = properties?.messageExpiryInterval ?? 0
  if (properties === undefined || interval === 0) return { properties }
  const left = message.publishAt + interval * 1000 - now
  if (left <= 0) return undefined
  return { properties: { ...properties, messageExpiryInterval: Math.ceil(left / 1000) } }
}
