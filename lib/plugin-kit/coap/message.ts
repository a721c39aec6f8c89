// The CoAP message format (RFC 7252 §3): a 4-byte header (version, type,
// token length, code, message id), the token, the options (delta-encoded
// numbers, extended by 1 or 2 bytes), and the payload after 0xFF. `parse`
// refuses every format error the RFC names (CoapFormatError, with the
// message id when the header was readable, so a CON can be answered with
// RST); `serialize` writes the options sorted by number.

export const TYPE = Object.freeze({ CON: 0, NON: 1, ACK: 2, RST: 3 } as const)
export type CoapType = typeof TYPE[keyof typeof TYPE]
export const TYPE_NAMES: readonly string[] = Object.freeze(['CON', 'NON', 'ACK', 'RST'])

/** Option numbers of RFC 7252 §12.2, RFC 7641 (Observe), RFC 7959 (Block, Size) and RFC 7967 (No-Response). */
export const OPTION = Object.freeze({
  IF_MATCH: 1,
  URI_HOST: 3,
  ETAG: 4,
  IF_NONE_MATCH: 5,
  OBSERVE: 6,
  URI_PORT: 7,
  LOCATION_PATH: 8,
  URI_PATH: 11,
  CONTENT_FORMAT: 12,
  MAX_AGE: 14,
  URI_QUERY: 15,
  ACCEPT: 17,
  LOCATION_QUERY: 20,
  BLOCK2: 23,
  BLOCK1: 27,
  SIZE2: 28,
  PROXY_URI: 35,
  PROXY_SCHEME: 39,
  SIZE1: 60,
  NO_RESPONSE: 258
} as const)

/** Codes as class.detail (RFC 7252 §12.1): `code(2, 5)` is 2.05 Content. */
export function code (klass: number, detail: number): number {
  return (klass << 5) | detail
}

export const CODE = Object.freeze({
  EMPTY: 0,
  GET: 1,
  POST: 2,
  PUT: 3,
  DELETE: 4,
  FETCH: 5,
  PATCH: 6,
  IPATCH: 7,
  CREATED: code(2, 1),
  DELETED: code(2, 2),
  VALID: code(2, 3),
  CHANGED: code(2, 4),
  CONTENT: code(2, 5),
  CONTINUE: code(2, 31),
  BAD_REQUEST: code(4, 0),
  UNAUTHORIZED: code(4, 1),
  BAD_OPTION: code(4, 2),
  FORBIDDEN: code(4, 3),
  NOT_FOUND: code(4, 4),
  METHOD_NOT_ALLOWED: code(4, 5),
  NOT_ACCEPTABLE: code(4, 6),
  REQUEST_ENTITY_INCOMPLETE: code(4, 8),
  PRECONDITION_FAILED: code(4, 12),
  REQUEST_ENTITY_TOO_LARGE: code(4, 13),
  UNSUPPORTED_CONTENT_FORMAT: code(4, 15),
  INTERNAL_SERVER_ERROR: code(5, 0),
  NOT_IMPLEMENTED: code(5, 1),
  SERVICE_UNAVAILABLE: code(5, 3),
  GATEWAY_TIMEOUT: code(5, 4),
  PROXYING_NOT_SUPPORTED: code(5, 5)
} as const)

/** `2.05`, `4.04`, `0.01` … */
export function codeText (value: number): string {
  return `${value >> 5}.${String(value & 0x1f).padStart(2, '0')}`
}

export function isRequest (value: number): boolean {
  return value >= 1 && value <= 31
}

export function isResponse (value: number): boolean {
  return value >= 64 && value <= 191
}

export interface CoapOption {
  number: number
  value: Buffer
}

export interface CoapMessage {
  type: CoapType
  code: number
  messageId: number
  /** 0 to 8 bytes */
  token: Buffer
  /** in the order read (ascending number); serialize sorts them */
  options: CoapOption[]
  payload: Buffer
}

/** A datagram that is not a CoAP message; `messageId`/`type` when the header was readable. */
export class CoapFormatError extends Error {
  constructor (message: string, readonly messageId?: number, readonly type?: CoapType) {
    super(message)
    this.name = 'CoapFormatError'
  }
}

const PAYLOAD_MARKER = 0xff
/** options in one message beyond which it is refused (RFC 7252 sets no limit; a datagram could hold ~65 000 empty ones) */
export const MAX_OPTIONS = 64

/** Reads a datagram; throws CoapFormatError. */
export function parse (datagram: Buffer): CoapMessage {
  if (datagram.length < 4) throw new CoapFormatError(`${datagram.length} bytes: shorter than the 4-byte header`)
  const first = datagram[0]
  const version = first >> 6
  if (version !== 1) throw new CoapFormatError(`version ${version} (only 1 is defined)`)
  const type = ((first >> 4) & 0x3) as CoapType
  const tokenLength = first & 0xf
  const messageId = datagram.readUInt16BE(2)
  const fail = (why: string): never => { throw new CoapFormatError(why, messageId, type) }
  if (tokenLength > 8) fail(`token length ${tokenLength} (at most 8)`)
  const messageCode = datagram[1]
  if (messageCode === CODE.EMPTY) {
    // an Empty message is the header alone (RFC 7252 §4.1)
    if (datagram.length !== 4 || tokenLength !== 0) fail('an Empty message (0.00) with bytes after the header')
    return { type, code: CODE.EMPTY, messageId, token: Buffer.alloc(0), options: [], payload: Buffer.alloc(0) }
  }
  if (4 + tokenLength > datagram.length) fail('the token is cut short')
  const token = datagram.subarray(4, 4 + tokenLength)
  const options: CoapOption[] = []
  let at = 4 + tokenLength
  let number = 0
  while (at < datagram.length) {
    const byte = datagram[at++]
    if (byte === PAYLOAD_MARKER) {
      if (at === datagram.length) fail('a payload marker with no payload')
      return { type, code: messageCode, messageId, token, options, payload: datagram.subarray(at) }
    }
    let delta = byte >> 4
    let length = byte & 0xf
    if (delta === 15 || length === 15) fail('option delta or length 15 (reserved)')
    ;[delta, at] = extended(datagram, delta, at, fail)
    ;[length, at] = extended(datagram, length, at, fail)
    number += delta
    if (number > 0xffff) fail(`option number ${number} (at most 65535)`)
    if (at + length > datagram.length) fail(`option ${number} is cut short`)
    if (options.length === MAX_OPTIONS) fail(`more than ${MAX_OPTIONS} options`)
    options.push({ number, value: datagram.subarray(at, at + length) })
    at += length
  }
  return { type, code: messageCode, messageId, token, options, payload: Buffer.alloc(0) }
}

/** A 4-bit delta or length with its extension bytes (13: one more byte + 13, 14: two more bytes + 269). */
function extended (datagram: Buffer, nibble: number, at: number, fail: (why: string) => never): [number, number] {
  if (nibble === 13) {
    if (at + 1 > datagram.length) fail('an option header is cut short')
    return [datagram[at] + 13, at + 1]
  }
  if (nibble === 14) {
    if (at + 2 > datagram.length) fail('an option header is cut short')
    return [datagram.readUInt16BE(at) + 269, at + 2]
  }
  return [nibble, at]
}

function nibbleOf (value: number): [number, Buffer] {
  if (value < 13) return [value, Buffer.alloc(0)]
  if (value < 269) return [13, Buffer.from([value - 13])]
  const extra = Buffer.alloc(2)
  extra.writeUInt16BE(value - 269)
  return [14, extra]
}

/** Writes a message; throws for a token over 8 bytes or an Empty message with anything but the header. */
export function serialize (message: CoapMessage): Buffer {
  const { token, payload } = message
  if (token.length > 8) throw new RangeError(`token of ${token.length} bytes (at most 8)`)
  if (message.code === CODE.EMPTY && (token.length > 0 || message.options.length > 0 || payload.length > 0)) {
    throw new RangeError('an Empty message carries no token, option or payload')
  }
  const parts: Buffer[] = []
  const header = Buffer.alloc(4)
  header[0] = (1 << 6) | (message.type << 4) | token.length
  header[1] = message.code
  header.writeUInt16BE(message.messageId & 0xffff, 2)
  parts.push(header, token)
  const options = [...message.options].sort((a, b) => a.number - b.number)
  let previous = 0
  for (const option of options) {
    const [delta, deltaExtra] = nibbleOf(option.number - previous)
    const [length, lengthExtra] = nibbleOf(option.value.length)
    parts.push(Buffer.from([(delta << 4) | length]), deltaExtra, lengthExtra, option.value)
    previous = option.number
  }
  if (payload.length > 0) parts.push(Buffer.from([PAYLOAD_MARKER]), payload)
  return Buffer.concat(parts)
}

// ---- option values (RFC 7252 §3.2) -------------------------------------------

/** A uint option value: the fewest bytes, big-endian; 0 is the empty value. */
export function uintOption (value: number): Buffer {
  if (!Number.isInteger(value) || value < 0 || value > 0xffffffff) throw new RangeError(`${value} is not a uint option value`)
  const bytes: number[] = []
  for (let v = value; v > 0; v = Math.floor(v / 256)) bytes.unshift(v % 256)
  return Buffer.from(bytes)
}

/** A uint option value read back; undefined for more than 4 bytes. */
export function readUint (value: Buffer): number | undefined {
  if (value.length > 4) return undefined
  let n = 0
  for (const byte of value) n = n * 256 + byte
  return n
}

export function option (message: CoapMessage, number: number): Buffer | undefined {
  return message.options.find((o) => o.number === number)?.value
}

export function options (message: CoapMessage, number: number): Buffer[] {
  return message.options.filter((o) => o.number === number).map((o) => o.value)
}

export function uint (message: CoapMessage, number: number): number | undefined {
  const value = option(message, number)
  return value === undefined ? undefined : readUint(value)
}

/** The options a server knows; a request with another critical one (odd number) gets 4.02 Bad Option (RFC 7252 §5.4.1). */
export const KNOWN_OPTIONS: ReadonlySet<number> = new Set(Object.values(OPTION))

export function isCritical (number: number): boolean {
  return (number & 1) === 1
}

/** The first critical option of a request the server does not know, if any. */
export function unknownCritical (message: CoapMessage): number | undefined {
  return message.options.find((o) => isCritical(o.number) && !KNOWN_OPTIONS.has(o.number))?.number
}

/** `Uri-Path` segments and `Uri-Query` items as read (UTF-8). */
export function uriOf (message: CoapMessage): { path: string[], query: string[] } {
  return {
    path: options(message, OPTION.URI_PATH).map((v) => v.toString('utf8')),
    query: options(message, OPTION.URI_QUERY).map((v) => v.toString('utf8'))
  }
}

/** A short text of a message for logs and errors: `CON 0.03 mid=12 token=ab12 [11:mqtt,11:t]`. */
export function describe (message: CoapMessage): string {
  const opts = message.options.map((o) => `${o.number}:${o.value.length <= 16 ? o.value.toString('hex') : `${o.value.length}B`}`).join(',')
  return `${TYPE_NAMES[message.type]} ${codeText(message.code)} mid=${message.messageId} token=${message.token.toString('hex')} [${opts}] ${message.payload.length}B`
}
