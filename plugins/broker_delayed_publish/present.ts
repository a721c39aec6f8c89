// How a delayed message is shown by the API and broker_ctl (EMQ X 5's field
// names: msgid, delayed_interval, delayed_remaining, expected_at …; times as
// the API's other records write them).
import { specTime } from '../../lib/plugin-kit/index.js'
import type { DelayedMessage } from './record.js'

export interface DelayedRecord {
  msgid: string
  node: string
  topic: string
  qos: 0 | 1 | 2
  retain: boolean
  from_clientid: string
  from_username: string
  /** seconds asked for */
  delayed_interval: number
  /** seconds left (0 once due) */
  delayed_remaining: number
  publish_at: string
  expected_at: string
}

export function present (id: string, message: DelayedMessage, now = Date.now()): DelayedRecord {
  return {
    msgid: id,
    node: message.node,
    topic: message.topic,
    qos: message.qos,
    retain: message.retain,
    from_clientid: message.fromClientId ?? '',
    from_username: message.fromUsername ?? '',
    delayed_interval: message.delay,
    delayed_remaining: Math.max(0, Math.ceil((message.expectedAt - now) / 1000)),
    publish_at: specTime(message.publishAt),
    expected_at: specTime(message.expectedAt)
  }
}

/** One line of `broker_ctl delayed list`. */
export function line (record: DelayedRecord): string {
  return `msgid=${record.msgid}, topic=${JSON.stringify(record.topic)}, qos=${record.qos}, retain=${record.retain}, ` +
    `from=${JSON.stringify(record.from_clientid)}, remaining=${record.delayed_remaining}s, expected_at=${record.expected_at}, node=${record.node}`
}
