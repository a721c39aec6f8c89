// Device management commands, as EMQ X's emqx_lwm2m takes them on the
// command topic (`{"reqID": …, "msgType": …, "data": {"path": "/3/0/0", …}}`),
// planned as the CoAP request to send to the device; and the device's
// answer as the JSON published on the response topic
// (`{"reqID", "msgType", "data": {"code": "2.05", "codeMsg": "content", "reqPath", "content": […]}}`).
import { encodeText } from './text.js'
import { encodeTlv } from './tlv.js'
import { coerceValue, ContentError, FORMAT, formatPath, parsePath, type Entry, type ResourceType, type TypeOf, type Value } from './values.js'

export const MSG_TYPES: readonly string[] = Object.freeze(['read', 'write', 'execute', 'discover', 'write-attr', 'observe', 'cancel-observe', 'create', 'delete'])

export interface Request {
  method: 'GET' | 'PUT' | 'POST' | 'DELETE'
  path: number[]
  /** Uri-Query parts (`pmin=10`) */
  query?: string[]
  payload?: Buffer
  contentFormat?: number
  accept?: number
  /** 0: observe, 1: cancel */
  observe?: 0 | 1
}

export interface Command {
  /** as sent (a number or a string in EMQ X's examples); echoed in the answer */
  reqID: unknown
  msgType: string
  /** the path or basePath, as the answer's reqPath */
  reqPath: string
  request: Request
}

/** A command that cannot be sent: answered at once with this code. */
export interface Refusal { reqID: unknown, msgType: string, reqPath?: string, code: string, message: string }

const ATTRIBUTES: readonly string[] = Object.freeze(['pmin', 'pmax', 'gt', 'lt', 'st'])
/** A command payload larger than this is refused (a write carries at most one device datagram's worth, block-wise transfer aside). */
export const MAX_COMMAND_BYTES = 64 * 1024
const MAX_WRITE_VALUES = 256
const MAX_ARGS_BYTES = 1024

/** Parses a command; a Refusal says why it cannot be sent (code 4.00 and the reason). */
export function parseCommand (payload: Buffer, typeOf: TypeOf): Command | Refusal {
  const refuse = (message: string, reqID: unknown = null, msgType = 'unknown', reqPath?: string): Refusal => ({ reqID, msgType, reqPath, code: '4.00', message })
  if (payload.length > MAX_COMMAND_BYTES) return refuse(`the command is over ${MAX_COMMAND_BYTES} bytes`)
  let doc: unknown
  try {
    doc = JSON.parse(payload.toString('utf8'))
  } catch {
    return refuse('the command is not JSON')
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return refuse('the command is not a JSON object')
  const { reqID, msgType, data } = doc as { reqID?: unknown, msgType?: unknown, data?: unknown }
  const id = typeof reqID === 'number' || typeof reqID === 'string' ? reqID : null
  if (typeof msgType !== 'string' || !MSG_TYPES.includes(msgType)) return refuse(`msgType ${JSON.stringify(msgType)} is not one of ${MSG_TYPES.join(', ')}`, id)
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return refuse('"data" is not an object', id, msgType)
  const fields = data as Record<string, unknown>
  const rawPath = typeof fields.basePath === 'string' ? fields.basePath : fields.path
  const reqPath = typeof rawPath === 'string' ? rawPath : undefined
  const path = reqPath === undefined ? undefined : parsePath(reqPath)
  if (path === undefined) return refuse(`${JSON.stringify(rawPath)} is not an LwM2M path (/object/instance/resource)`, id, msgType, reqPath)
  try {
    const request = plan(msgType, path, fields, typeOf)
    return { reqID: id, msgType, reqPath: reqPath!, request }
  } catch (err) {
    if (err instanceof ContentError) return refuse(err.message, id, msgType, reqPath)
    throw err
  }
}

function plan (msgType: string, path: number[], data: Record<string, unknown>, typeOf: TypeOf): Request {
  switch (msgType) {
    case 'read': return { method: 'GET', path }
    case 'discover': return { method: 'GET', path, accept: FORMAT.link }
    case 'observe': return { method: 'GET', path, observe: 0 }
    case 'cancel-observe': return { method: 'GET', path, observe: 1 }
    case 'delete': return { method: 'DELETE', path }
    case 'execute': {
      if (path.length !== 3) throw new ContentError('execute needs a resource path (/object/instance/resource)')
      const args = data.args ?? ''
      if (typeof args !== 'string' || Buffer.byteLength(args) > MAX_ARGS_BYTES) throw new ContentError(`"args" is not a string of at most ${MAX_ARGS_BYTES} bytes`)
      return args === '' ? { method: 'POST', path } : { method: 'POST', path, payload: encodeText(args), contentFormat: FORMAT.text }
    }
    case 'write-attr': {
      const query: string[] = []
      for (const name of ATTRIBUTES) {
        const value = data[name]
        if (value === undefined || value === null || value === '') continue
        const n = Number(value)
        if ((typeof value !== 'number' && typeof value !== 'string') || !Number.isFinite(n)) throw new ContentError(`${name} ${JSON.stringify(value)} is not a number`)
        query.push(`${name}=${n}`)
      }
      if (query.length === 0) throw new ContentError(`write-attr without any of ${ATTRIBUTES.join(', ')}`)
      return { method: 'PUT', path, query }
    }
    case 'create': {
      if (path.length !== 1) throw new ContentError('create needs an object path as basePath (/object)')
      // content paths are /<instance>/<resource> under the object: the new instance's resources
      const values = writeValues(path, data, typeOf)
      return { method: 'POST', path, payload: encodeTlv(path, values, typeOf), contentFormat: FORMAT.tlv }
    }
    default: {
      // write: one value at `path`, or `content` under `basePath` (a partial update of the instance)
      if (path.length < 2) throw new ContentError('write needs an instance or a resource path')
      const values = writeValues(path, data, typeOf)
      const single = data.content === undefined
      if (single && path.length < 3) throw new ContentError('a single write needs a resource path (/object/instance/resource)')
      const payload = encodeTlv(path, values, typeOf)
      return { method: single ? 'PUT' : 'POST', path, payload, contentFormat: FORMAT.tlv }
    }
  }
}

/** The values of a write (or create): `{path, type, value}` or `{basePath, content: [{path, type, value}]}`. */
function writeValues (base: number[], data: Record<string, unknown>, typeOf: TypeOf): Array<{ path: number[], value: Value }> {
  const items: unknown[] = data.content === undefined ? [{ path: '', type: data.type, value: data.value }] : Array.isArray(data.content) ? data.content : []
  if (items.length === 0 || items.length > MAX_WRITE_VALUES) throw new ContentError(`"content" is not a list of 1-${MAX_WRITE_VALUES} values`)
  return items.map((raw) => {
    if (typeof raw !== 'object' || raw === null) throw new ContentError('a content item is not an object')
    const item = raw as { path?: unknown, type?: unknown, value?: unknown }
    const relative = typeof item.path === 'string' ? item.path : ''
    // a content path is under basePath (EMQ X: "the full path is basePath + path"); a full path is taken as such
    const full = relative === '' ? base : (relative.startsWith(`${formatPath(base)}/`) ? parsePath(relative) : parsePath(`${formatPath(base)}/${relative.replace(/^\//, '')}`))
    if (full === undefined || full.length < 3) throw new ContentError(`${JSON.stringify(item.path)} is not a resource path under ${formatPath(base)}`)
    const known = typeOf(full[0], full[2])
    const type = (typeof item.type === 'string' ? item.type : known) as ResourceType | undefined
    if (type === undefined) throw new ContentError(`the type of ${formatPath(full)} is not known: give "type"`)
    if (known !== undefined && type !== known) throw new ContentError(`${formatPath(full)} is of type ${known}, not ${type}`)
    return { path: full, value: coerceValue(type, item.value) }
  })
}

const CODE_MESSAGES: Readonly<Record<string, string>> = Object.freeze({
  '2.01': 'created',
  '2.02': 'deleted',
  '2.03': 'valid',
  '2.04': 'changed',
  '2.05': 'content',
  '2.31': 'continue',
  '4.00': 'bad_request',
  '4.01': 'unauthorized',
  '4.02': 'bad_option',
  '4.03': 'forbidden',
  '4.04': 'not_found',
  '4.05': 'method_not_allowed',
  '4.06': 'not_acceptable',
  '4.08': 'request_entity_incomplete',
  '4.12': 'precondition_failed',
  '4.13': 'request_entity_too_large',
  '4.15': 'unsupported_content_format',
  '5.00': 'internal_server_error',
  '5.01': 'not_implemented',
  '5.02': 'bad_gateway',
  '5.03': 'service_unavailable',
  '5.04': 'gateway_timeout',
  '5.05': 'proxying_not_supported'
})

export function codeMessage (code: string): string {
  return CODE_MESSAGES[code] ?? 'unknown'
}

export interface AnswerData {
  code: string
  codeMsg: string
  reqPath?: string
  content?: Entry[] | string[]
  /** why the gateway answered itself (a refused command, a payload it could not read, no answer from the device) */
  reason?: string
}

/** The JSON published for a command's answer (or a notification, `seqNum` set). */
export function answerMessage (reqID: unknown, msgType: string, data: AnswerData, seqNum?: number): Buffer {
  const message: Record<string, unknown> = { reqID, msgType }
  if (seqNum !== undefined) message.seqNum = seqNum
  message.data = data
  return Buffer.from(JSON.stringify(message))
}
