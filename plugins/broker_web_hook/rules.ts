// The hook rules, EMQ X's `web.hook.rule.<event>.<n> = {"action": "on_…",
// "topic": "a/#"}`: which events are posted, and for the events that carry a
// topic, which topics. A rule's JSON is checked when the settings are read,
// so a broken one is refused with its file and line.
import { compileTopicFilter, topicMatcher } from '../../lib/plugin-kit/index.js'

/** The events a rule may name, each with its one action (EMQ X's callback name). */
export const EVENTS = {
  'client.connect': 'on_client_connect',
  'client.connack': 'on_client_connack',
  'client.connected': 'on_client_connected',
  'client.disconnected': 'on_client_disconnected',
  'client.subscribe': 'on_client_subscribe',
  'client.unsubscribe': 'on_client_unsubscribe',
  'session.subscribed': 'on_session_subscribed',
  'session.unsubscribed': 'on_session_unsubscribed',
  'session.terminated': 'on_session_terminated',
  'message.publish': 'on_message_publish',
  'message.delivered': 'on_message_delivered',
  'message.acked': 'on_message_acked',
  'message.dropped': 'on_message_dropped'
} as const

export type EventName = keyof typeof EVENTS

/** The events whose posts name a topic (or a topic filter): a rule may narrow them with `topic`. */
const TOPIC_EVENTS: readonly EventName[] = Object.freeze([
  'client.subscribe', 'client.unsubscribe', 'session.subscribed', 'session.unsubscribed',
  'message.publish', 'message.delivered', 'message.acked', 'message.dropped'
] as const)

export const RULE_PREFIX = 'web.hook.rule.'

/** One rule as the settings hold it once checked. */
export interface Rule {
  event: EventName
  action: string
  /** the topic filter; absent: every topic */
  topic?: string
}

const isEvent = (name: string): name is EventName => Object.hasOwn(EVENTS, name)

/** The event a rule key names (`web.hook.rule.message.publish.1` → `message.publish`); throws for another key. */
export function ruleEvent (key: string): EventName {
  const rest = key.startsWith(RULE_PREFIX) ? key.slice(RULE_PREFIX.length) : ''
  const dot = rest.lastIndexOf('.')
  const event = dot > 0 ? rest.slice(0, dot) : rest
  if (dot <= 0 || !isEvent(event)) {
    throw new Error(`a rule key is ${RULE_PREFIX}<event>.<n>, the event one of ${Object.keys(EVENTS).join(', ')}`)
  }
  return event
}

/** Checks one rule (the key and its JSON text); throws an Error saying what is wrong. */
export function parseRule (key: string, text: string): Rule {
  const event = ruleEvent(key)
  let spec: unknown
  try {
    spec = JSON.parse(text)
  } catch (err) {
    throw new Error(`the rule is not valid JSON (${(err as Error).message}); write it as {"action": "${EVENTS[event]}"}`, { cause: err })
  }
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) throw new Error(`the rule must be a JSON object, e.g. {"action": "${EVENTS[event]}"}`)
  const { action, topic, ...rest } = spec as Record<string, unknown>
  const unknown = Object.keys(rest)
  if (unknown.length > 0) throw new Error(`unknown field ${JSON.stringify(unknown[0])} in the rule (it has "action" and "topic")`)
  if (typeof action !== 'string') throw new Error(`the rule has no "action" (for ${event}: "${EVENTS[event]}")`)
  if (!Object.values(EVENTS).includes(action as never)) throw new Error(`unknown action ${JSON.stringify(action)} (for ${event}: "${EVENTS[event]}")`)
  if (action !== EVENTS[event]) throw new Error(`the action of a ${event} rule is "${EVENTS[event]}", not ${JSON.stringify(action)}`)
  if (topic === undefined) return { event, action }
  if (!TOPIC_EVENTS.includes(event)) throw new Error(`${event} events have no topic: leave "topic" out`)
  if (typeof topic !== 'string') throw new Error('"topic" must be a string (a topic filter)')
  compileTopicFilter(topic)
  return { event, action, topic }
}

/** Which topics of one event are posted: all when any rule of it has no filter, else those matching a filter. */
export type TopicTest = (topic: string) => boolean

const EVERY_TOPIC: TopicTest = () => true

/** The events the rules name, each with its topic test (several rules of one event: a topic matching any is posted once). */
export function eventsOf (rules: Iterable<Rule>): Map<EventName, TopicTest> {
  const filters = new Map<EventName, string[] | null>()
  for (const rule of rules) {
    const known = filters.get(rule.event)
    if (rule.topic === undefined || known === null) filters.set(rule.event, null)
    else filters.set(rule.event, [...known ?? [], rule.topic])
  }
  const tests = new Map<EventName, TopicTest>()
  for (const [event, list] of filters) {
    if (list === null) {
      tests.set(event, EVERY_TOPIC)
      continue
    }
    const matchers = [...new Set(list)].map(topicMatcher)
    tests.set(event, matchers.length === 1 ? matchers[0] : (topic) => matchers.some((match) => match(topic)))
  }
  return tests
}
