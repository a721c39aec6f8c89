// A delayed message as the plugin store keeps it: the key is its id, the
// value this record as JSON (payload and correlation data in base64). The id
// starts with the time it is due (12 hex digits of ms since the epoch), so the
// store's key order is the order messages fall due. What is read back is
// checked again: a record that does not decode to a publishable message is
// refused (and only logged by the caller).
import { randomBytes } from 'node:crypto'
import Joi from 'joi'
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
  return expectedAt.toString(16).padStart(DUE_DIGITS, '0') + randomBytes(6).toString('hex')
}

/** When the message with this id falls due (ms since the epoch). */
export function dueOf (id: string): number {
  return parseInt(id.slice(0, DUE_DIGITS), 16)
}

export function isId (id: string): boolean {
  return ID.test(id)
}

const base64 = Joi.string().base64({ paddingRequired: true }).allow('')
const stored = Joi.object<StoredRecord>({
  v: Joi.valid(1).required(),
  topic: Joi.string().required().custom((topic: string, helpers) => {
    const fault = topicNameFault(topic)
    return fault === undefined ? topic : helpers.message({ custom: fault })
  }),
  payload: base64.required(),
  qos: Joi.valid(0, 1, 2).required(),
  retain: Joi.boolean().strict().required(),
  properties: Joi.object({
    payloadFormatIndicator: Joi.boolean().strict(),
    messageExpiryInterval: Joi.number().integer().min(0).max(2 ** 32 - 1),
    contentType: Joi.string().allow(''),
    responseTopic: Joi.string().custom((topic: string, helpers) => topicNameFault(topic) === undefined ? topic : helpers.error('any.invalid')),
    correlationData: base64,
    userProperties: Joi.object().pattern(/.*/, Joi.alternatives(Joi.string().allow(''), Joi.array().items(Joi.string().allow(''))))
  }),
  from_clientid: Joi.string().allow(''),
  from_username: Joi.string().allow(''),
  node: Joi.string().required(),
  delay: Joi.number().integer().min(0).max(MAX_DELAY_S).required(),
  publish_at: Joi.number().integer().min(0).max(LATEST).required(),
  expected_at: Joi.number().integer().min(0).max(LATEST).required()
}).options({ convert: false })

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
  const { error, value: record } = stored.validate(parsed)
  if (error !== undefined) return { why: error.message }
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
