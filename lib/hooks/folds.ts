// The fold hooks (`message.publish`, `client.subscribe`, `client.unsubscribe`):
// each handler sees what the ones before it made of the message or filter and
// may change it or stop it. They run on the chain runner (chain.ts), so a
// fold whose handlers answer synchronously costs no promise. A handler that
// throws (or whose promise rejects) is logged and skipped; a change that is
// not a valid topic name (publish) or filter (subscribe, unsubscribe) is
// logged and not applied.
import { runChain, type ChainRules } from './chain.js'
import type { HookRegistry } from './registry.js'
import type { ClientInfo, PublishAnswer, PublishMessage, SubscribeAnswer, SubscribeFilter } from './types.js'
import { validTopicFilter, validTopicName } from '../service/topic-validation.js'

/** Where a fold ended: the message or filter to go on with, or a stop with its reason code. */
export type Stopped = { stop: number, reason?: string }

/** A reason code as MQTT carries it: one byte. */
function reasonCode (code: number, fallback: number): number {
  return Number.isInteger(code) && code >= 0 && code <= 0xff ? code : fallback
}

function publishRules (hooks: HookRegistry): ChainRules<PublishMessage, PublishAnswer, PublishMessage | Stopped, undefined> {
  return {
    decide: (answer, message) => {
      if (typeof answer !== 'object' || answer === null) return undefined
      if ('stop' in answer) return { stop: reasonCode(answer.stop, 0x80), reason: answer.reason }
      if (answer.topic !== undefined) {
        if (typeof answer.topic === 'string' && validTopicName(answer.topic) && !answer.topic.startsWith('$SYS')) message.topic = answer.topic
        else hooks.failed('message.publish', new Error(`a handler's topic ${JSON.stringify(answer.topic)} is not a topic name; not applied`))
      }
      if (answer.payload !== undefined) {
        if (Buffer.isBuffer(answer.payload)) message.payload = answer.payload
        else hooks.failed('message.publish', new Error('a handler\'s payload is not a Buffer; not applied'))
      }
      if (typeof answer.retain === 'boolean') message.retain = answer.retain
      return undefined
    },
    failed: (err) => {
      hooks.failed('message.publish', err)
      return undefined
    },
    fallback: (message) => message
  }
}

const publishRulesOf = new WeakMap<HookRegistry, ReturnType<typeof publishRules>>()

/** Runs `message.publish` over `message` (changed in place); the message to route, or where it stopped. */
export function foldPublish (hooks: HookRegistry, message: PublishMessage): PublishMessage | Stopped | Promise<PublishMessage | Stopped> {
  let rules = publishRulesOf.get(hooks)
  if (rules === undefined) publishRulesOf.set(hooks, rules = publishRules(hooks))
  return runChain(hooks.handlers('message.publish'), message, rules, undefined)
}

export function isStopped<T extends object> (result: T | Stopped): result is Stopped {
  return 'stop' in result
}

/** Runs `client.subscribe` over one filter of a SUBSCRIBE (a cold path: one closure per handler per call). */
export function foldSubscribe (hooks: HookRegistry, client: ClientInfo, filter: SubscribeFilter): SubscribeFilter | Stopped | Promise<SubscribeFilter | Stopped> {
  const handlers = hooks.handlers('client.subscribe').map((handler) => (f: SubscribeFilter) => handler(client, f))
  const rules: ChainRules<SubscribeFilter, SubscribeAnswer, SubscribeFilter | Stopped, undefined> = {
    decide: (answer, current) => {
      if (typeof answer !== 'object' || answer === null) return undefined
      if ('stop' in answer) return { stop: Math.max(reasonCode(answer.stop, 0x80), 0x80) }
      if (answer.topic !== undefined) {
        if (typeof answer.topic === 'string' && validTopicFilter(answer.topic)) current.topic = answer.topic
        else hooks.failed('client.subscribe', new Error(`a handler's filter ${JSON.stringify(answer.topic)} is not a topic filter; not applied`))
      }
      if (answer.qos === 0 || answer.qos === 1 || answer.qos === 2) current.qos = answer.qos
      return undefined
    },
    failed: (err) => {
      hooks.failed('client.subscribe', err)
      return undefined
    },
    fallback: (current) => current
  }
  return runChain(handlers, { topic: filter.topic, qos: filter.qos }, rules, undefined)
}

/** Runs `client.unsubscribe` over one filter of an UNSUBSCRIBE (synchronous handlers only). */
export function foldUnsubscribe (hooks: HookRegistry, client: ClientInfo, topic: string): string {
  let current = topic
  for (const handler of hooks.handlers('client.unsubscribe')) {
    try {
      const answer = handler(client, current)
      if (answer === undefined || answer === null) continue
      if (typeof answer === 'string' && validTopicFilter(answer)) current = answer
      else hooks.failed('client.unsubscribe', new Error(`a handler's filter ${JSON.stringify(answer)} is not a topic filter; not applied`))
    } catch (err) {
      hooks.failed('client.unsubscribe', err)
    }
  }
  return current
}
