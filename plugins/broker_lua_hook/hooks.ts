// The node's hook points → the scripts' functions, with EMQ X lua_hook's
// arguments and answers. Scripts run in name order; in a fold each sees what
// the one before answered. Topics starting with `$` are not given to scripts
// (EMQ X skips them: `$SYS/…`, `$share/…`, `$delayed/…`). A missing user name
// (or a message the node publishes itself, with no client) is passed as "".
import type { ClientInfo, MessageInfo, PublishAnswer, PublishMessage, SubscribeAnswer, SubscribeFilter } from '../../lib/plugin-kit/index.js'
import type { LuaArg, LuaValue } from './lua-vm.js'
import type { HookFunction, Script } from './script.js'
import type { ScriptSet } from './scripts.js'

/** PUBACK/PUBREC reason of a message a script dropped: EMQ X answers a stopped publish as one that reached no subscriber. */
export const DROPPED_PUBLISH = 0x10
/** SUBACK reason of a filter a script dropped (unspecified error; 0x80 is also MQTT 3.1.1's failure). */
export const DROPPED_FILTER = 0x80

/** What a publish fold is given; `authorize` is not used here. */
export type PublishInput = Omit<PublishMessage, 'authorize'>

const isSystem = (topic: string): boolean => topic.startsWith('$')
const who = (client: ClientInfo | undefined, from?: string): [string, string] => [client?.clientId ?? from ?? '', client?.username ?? '']

/** A topic name a script answered: UTF-8, 1 to 65535 bytes, no wildcard, no NUL. */
export function topicName (value: Buffer): string | undefined {
  const topic = validUtf8(value)
  if (topic === undefined || /[+#]/.test(topic) || topic.includes('\u0000')) return undefined
  return topic
}

/** A topic filter a script answered: `+` and `#` only as whole levels, `#` last. */
export function topicFilter (value: Buffer): string | undefined {
  const filter = validUtf8(value)
  if (filter === undefined || filter.includes('\u0000')) return undefined
  const levels = filter.split('/')
  const ok = levels.every((level, i) => (level === '#' ? i === levels.length - 1 : !/[+#]/.test(level) || level === '+'))
  return ok ? filter : undefined
}

function validUtf8 (value: Buffer): string | undefined {
  if (value.length === 0 || value.length > 65535) return undefined
  const text = value.toString('utf8')
  return Buffer.byteLength(text) === value.length && !text.includes('\ufffd') ? text : undefined
}

function qosOf (value: LuaValue): 0 | 1 | 2 | undefined {
  if (typeof value !== 'number') return undefined
  const qos = Math.round(value)
  return qos === 0 || qos === 1 || qos === 2 ? qos : undefined
}

/** EMQ X's to_retain: a boolean, 0 or 1, or the text true / false. */
function retainOf (value: LuaValue): boolean | undefined {
  if (typeof value === 'boolean') return value
  if (typeof value === 'number') return value === 0 ? false : value === 1 ? true : undefined
  if (Buffer.isBuffer(value)) return value.toString() === 'true' ? true : value.toString() === 'false' ? false : undefined
  return undefined
}

const nothing = (values: LuaValue[]): boolean => values.length === 0 || (values.length === 1 && values[0] === null)

export interface LuaHooks {
  publish: (message: PublishInput) => PublishAnswer
  subscribe: (client: ClientInfo, filter: SubscribeFilter) => SubscribeAnswer
  unsubscribe: (client: ClientInfo, topic: string) => string | undefined
  connected: (client: ClientInfo) => void
  disconnected: (client: ClientInfo, reason: string) => void
  sessionSubscribed: (client: ClientInfo, topic: string) => void
  sessionUnsubscribed: (client: ClientInfo, topic: string) => void
  delivered: (client: ClientInfo, message: MessageInfo) => void
  acked: (client: ClientInfo, message: MessageInfo) => void
}

export function luaHooks (scripts: ScriptSet, onDrop: (script: Script, topic: string) => void): LuaHooks {
  /** Calls `fn` of every script that handles it, for a notification (answers ignored). */
  const notify = (fn: HookFunction, args: readonly LuaArg[]): void => {
    for (const script of scripts.scriptsFor(fn)) script.call(fn, args)
  }

  /** The filter after every script's on_client_subscribe / on_client_unsubscribe: a new filter, false (dropped) or unchanged. */
  const filterFold = (fn: 'on_client_subscribe' | 'on_client_unsubscribe', client: ClientInfo, topic: string): string | false => {
    let current = topic
    for (const script of scripts.scriptsFor(fn)) {
      if (isSystem(current)) break
      const values = script.call(fn, [...who(client), current])
      if (values === undefined || nothing(values)) continue
      if (values[0] === false) return false
      const filter = Buffer.isBuffer(values[0]) ? topicFilter(values[0]) : undefined
      if (filter === undefined) script.refuse(fn, 'the answer is not a topic filter, false or nil')
      else current = filter
    }
    return current
  }

  return {
    publish (message) {
      const list = scripts.scriptsFor('on_message_publish')
      if (list.length === 0) return undefined
      const [clientId, username] = who(message.client, message.from)
      const qos = message.qos
      let { topic, payload, retain } = message
      let changed = false
      for (const script of list) {
        if (isSystem(topic)) break
        const values = script.call('on_message_publish', [clientId, username, topic, payload, qos, retain])
        if (values === undefined || nothing(values)) continue
        if (values[0] === false) {
          onDrop(script, topic)
          return { stop: DROPPED_PUBLISH, reason: `dropped by lua script ${script.name}` }
        }
        const [t, p, q, r] = values
        const next = { topic: Buffer.isBuffer(t) ? topicName(t) : undefined, payload: Buffer.isBuffer(p) ? p : undefined, qos: qosOf(q ?? null), retain: retainOf(r ?? null) }
        if (next.topic === undefined || next.payload === undefined || next.qos === undefined || next.retain === undefined) {
          script.refuse('on_message_publish', 'the answer is not (topic, payload, qos, retain), false or nil')
          continue
        }
        // the QoS answered is checked but not applied: the publisher's acknowledgement depends on it
        ({ topic, payload, retain } = { topic: next.topic, payload: next.payload, retain: next.retain })
        changed = true
      }
      return changed ? { topic, payload, retain } : undefined
    },

    subscribe (client, filter) {
      if (scripts.scriptsFor('on_client_subscribe').length === 0 || isSystem(filter.topic)) return undefined
      const answer = filterFold('on_client_subscribe', client, filter.topic)
      if (answer === false) return { stop: DROPPED_FILTER }
      return answer === filter.topic ? undefined : { topic: answer }
    },

    unsubscribe (client, topic) {
      if (scripts.scriptsFor('on_client_unsubscribe').length === 0 || isSystem(topic)) return undefined
      const answer = filterFold('on_client_unsubscribe', client, topic)
      // a dropped unsubscribe cannot be said to the node (the hook only renames): the filter goes unchanged
      return answer === false || answer === topic ? undefined : answer
    },

    connected: (client) => { notify('on_client_connected', [...who(client), 0]) },
    disconnected: (client, reason) => { notify('on_client_disconnected', [...who(client), reason]) },
    sessionSubscribed: (client, topic) => { if (!isSystem(topic)) notify('on_session_subscribed', [...who(client), topic]) },
    sessionUnsubscribed: (client, topic) => { if (!isSystem(topic)) notify('on_session_unsubscribed', [...who(client), topic]) },
    delivered: (client, m) => { if (!isSystem(m.topic)) notify('on_message_delivered', [...who(client), m.topic, m.payload, m.qos, m.retain]) },
    acked: (client, m) => { if (!isSystem(m.topic)) notify('on_message_acked', [...who(client), m.topic, m.payload, m.qos, m.retain]) }
  }
}
