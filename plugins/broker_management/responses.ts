// The answers of the v3 routes as joi schemas: each row of routes.ts names
// its answer's schema (`response`), openapi.ts turns them into the
// document's response schemas, and the API tests check real answers against
// that document (test/openapi.test.ts), so a record that changes shape
// without its schema fails there. Objects refuse unknown keys (joi's
// default), so a field added to a record must be added here too.
import Joi from 'joi'
import { ROLES } from './roles.js'

export const text = Joi.string().allow('')
export const int = Joi.number().integer()
/** SPEC §2: a record's time */
export const specTime = Joi.string().pattern(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/).description('local time, YYYY-MM-DD HH:MM:SS (SPEC §2)')
/** SPEC §2: a string nobody knows is `undefined` */
const orUndefined = (schema: Joi.Schema): Joi.Schema => Joi.alternatives().try(schema, Joi.string().valid('undefined'))

export const ok = Joi.string().valid('ok').description('the operation was done')
export const codeZero = Joi.object({ code: Joi.number().valid(0).required() })
export const empty = Joi.array().length(0).description('no data (v2)')

/** A node that did not answer a cluster-wide listing (routes.ts NodeError). */
export const nodeError = Joi.object({ node: text.required(), error: Joi.string().valid('badrpc').required(), message: text.required() }).description('a node that did not answer in time')
export const orNodeError = (schema: Joi.Schema): Joi.Schema => Joi.alternatives().try(schema, nodeError)
/** EMQ X's cluster-wide form: `[{node, <field>: value}]`, or a node's error. */
export const byNode = (field: string, value: Joi.Schema): Joi.ArraySchema => Joi.array().items(orNodeError(Joi.object({ node: text.required(), [field]: value.required() })))

export const apiListing = Joi.array().items(Joi.object({ name: text.required(), method: Joi.string().valid('GET', 'POST', 'PUT', 'DELETE').required(), path: text.required(), descr: text.required() }))

/** An object whose every key is required. */
export const req = (keys: Record<string, Joi.Schema>): Joi.ObjectSchema => Joi.object(Object.fromEntries(Object.entries(keys).map(([k, v]) => [k, v.required()])))

/** §2.7 */
export const brokerInfo = req({ datetime: specTime, node_status: Joi.string().valid('Running'), otp_release: text, sysdescr: text, uptime: text, version: text })

const nodeStatsKeys = {
  connections: int, max_fds: int, process_available: int, process_used: int, load1: text, load5: text, load15: text,
  name: text, node_status: Joi.string().valid('Running'), otp_release: text, uptime: text, version: text
}
/** §2.8: one node's figures, memory in bytes */
export const nodeStats = req({ ...nodeStatsKeys, memory_total: int.description('bytes'), memory_used: int.description('bytes') })
/** §2.8: the list form, memory written `<n>M` */
export const nodeStatsListed = req({ ...nodeStatsKeys, node: text, memory_total: text.description('megabytes, `<n>M`'), memory_used: text.description('megabytes, `<n>M`') })

/** §2.1 */
export const connection = req({
  clean_start: Joi.boolean(), client_id: text, connected_at: specTime, ipaddress: text, is_bridge: Joi.boolean(), is_super: Joi.boolean(), keepalive: int,
  mountpoint: text, node: text, peercert: text, port: int, proto_name: text, proto_ver: Joi.alternatives().try(int, text), username: text, will_topic: text, zone: text
})

/** §2.3 */
export const session = req({
  awaiting_rel_len: int, binding: text, clean_start: Joi.boolean(), client_id: text, created_at: orUndefined(specTime), deliver_msg: int, enqueue_msg: int,
  expiry_interval: int, heap_size: int, inflight_len: int, mailbox_len: int, max_awaiting_rel: int, max_inflight: int, max_mqueue: int,
  max_subscriptions: int, mqueue_dropped: int, mqueue_len: int, node: text, reductions: int, subscriptions_count: int, username: text
})

/** §2.5 */
export const subscription = req({ node: text, client_id: text, topic: text, qos: int.valid(0, 1, 2) })
/** §2.6 */
export const route = req({ topic: text, node: text })

/** §2.13 */
export const plugin = req({ name: text, version: text, description: text, active: Joi.boolean() })

/** §2.10 */
export const shutdownCount = Joi.alternatives().try(Joi.array().length(0), req({ closed: int, kicked: int })).description('[] until a connection was refused or kicked')
export const listener = req({ protocol: text, listen_on: text, acceptors: int, max_conns: int, current_conns: int, shutdown_count: shutdownCount })

/** §2.14 (`datatpye` as SPEC spells it) */
export const config = req({ key: text, value: text, datatpye: text, app: text, kind: Joi.string().valid('live', 'restart', 'fixed') })
/** §2.15 */
export const pluginSetting = req({ key: text, value: text, desc: text, required: Joi.boolean() }).keys({ datatype: Joi.string(), values: Joi.array().items(Joi.string()) })

/** §2.11, §2.12: name → count (a list's entry adds its `node`) */
export const counters = Joi.object().pattern(/^(?!node$)/, int)

/** §2.18 */
export const alarm = req({ id: text, desc: req({ severity: Joi.string().valid('notice', 'warning', 'error', 'critical'), title: text, summary: text, timestamp: specTime }) })

/** §2.18, cleared: the history adds `clear_at` to the record's desc (EMQ X's later present/history split) */
export const clearedAlarm = req({ id: text, desc: req({ severity: Joi.string().valid('notice', 'warning', 'error', 'critical'), title: text, summary: text, timestamp: specTime, clear_at: specTime }) })

/** a drain's progress (issue 10) */
export const drain = req({
  state: Joi.string().valid('idle', 'draining', 'drained'), rate: int, total: int, disconnected: int, remaining: int,
  started_at: specTime.allow(null), finished_at: specTime.allow(null)
})

/** §2.16 */
export const banned = req({ who: text, as: Joi.string().valid('client_id', 'username', 'ip_address'), reason: text, desc: text, by: text, until: int.description('unix seconds') })

/** §5.1: an application, without its secret */
export const app = Joi.object({
  app_id: text.required(), name: text.required(), desc: text.required(), status: Joi.boolean().required(),
  expired: Joi.alternatives().try(int, Joi.string().valid('undefined')).required().description('unix seconds, or undefined for never'),
  role: Joi.string().valid(...ROLES)
})
export const secret = req({ secret: text.description('shown only here: only its hash is kept') })

/** §2.17 */
export const user = req({ username: text, tags: text })
