// The answers of the v2 routes (SPEC §4.5) as joi schemas, as responses.ts
// has them for v3: the v2 records of presenters/records-v2.ts and the forms
// v2 lists take (`{objects}`, objects keyed by node name).
import Joi from 'joi'
import { counters, int, orNodeError, req, shutdownCount, specTime, text } from './responses.js'

/** A lookup's answer: `{objects: [...]}` */
export const objects = (row: Joi.Schema): Joi.ObjectSchema => req({ objects: Joi.array().items(orNodeError(row)) })

/** A node that did not answer, as its value in an object keyed by node name. */
const errorValue = req({ error: Joi.string().valid('badrpc'), message: text })
/** `{<node name>: value}`, a node that did not answer with its error value */
export const keyedByNode = (value: Joi.Schema): Joi.ObjectSchema => Joi.object().pattern(/^/, Joi.alternatives().try(value, errorValue))

/** §2.2 */
export const client = req({ client_id: text, username: text, ipaddress: text, port: int, clean_sess: Joi.boolean(), proto_ver: Joi.alternatives().try(int, text), keepalive: int, connected_at: specTime })

/** §2.4 */
export const session = req({
  client_id: text, clean_sess: Joi.boolean(), subscriptions: int, max_inflight: int, inflight_len: int, mqueue_len: int, mqueue_dropped: int,
  awaiting_rel_len: int, deliver_msg: int, enqueue_msg: int, created_at: Joi.alternatives().try(specTime, Joi.string().valid('undefined'))
})

/** §2.5 */
export const subscription = req({ client_id: text, topic: text, qos: int.valid(0, 1, 2) })

/** §2.9: `name` only in the list form */
export const nodeInfo = req({ version: text, sysdescr: text, uptime: text, datetime: specTime, otp_release: text, node_status: Joi.string().valid('Running') })
export const nodeInfoListed = nodeInfo.keys({ name: text.required() })
export const monitoring = req({
  name: text, otp_release: text, memory_total: text.description('megabytes, `<n>M`'), memory_used: text.description('megabytes, `<n>M`'), process_available: int, process_used: int,
  max_fds: int, clients: int, node_status: Joi.string().valid('Running'), load1: text, load5: text, load15: text
})

/** §2.10 */
export const listener = req({ protocol: text, listen: text, acceptors: int, max_clients: int, current_clients: int, shutdown_count: shutdownCount })

/** §6: `mqtt.broker.sys_interval` as seconds */
/** §2.15 exactly (v3 adds the key's type) */
export const pluginSetting = req({ key: text, value: text, desc: text, required: Joi.boolean() })

export const config = req({ key: text, value: Joi.alternatives().try(text, int), datatpye: text, app: text, kind: Joi.string().valid('live', 'restart', 'fixed') })

export { counters }
