// PROXY protocol v1 and v2 (HAProxy's proxy-protocol.txt): a load balancer in
// front of the broker writes one header with the client's real address before
// anything else on the connection. Only read on listeners configured for it:
// there the header is mandatory, and a connection without a valid one within
// the timeout is closed before a byte of MQTT (or TLS) is read.
import { isIPv4, isIPv6 } from 'node:net'
import type { Socket } from 'node:net'
import { plainAddress, type Peer } from './conn-info.js'

export interface ProxyHeader {
  version: 1 | 2
  /** the client's address; absent for v1 UNKNOWN, v2 LOCAL and address families without one (keep the socket's) */
  peer?: Peer
  /** bytes the header takes on the wire */
  length: number
}

export type ParseResult =
  | { state: 'incomplete' }
  | { state: 'invalid', reason: string }
  | { state: 'done', header: ProxyHeader }

/** A v1 header is at most 107 bytes, CRLF included. */
export const V1_MAX_LENGTH = 107
/**
 * Most bytes of addresses and TLVs after the 16-byte v2 header we accept. The
 * protocol allows 65535; proxies send tens (AWS, GCP and Azure TLVs included).
 */
export const V2_MAX_BODY = 2048

const V1_PREFIX = Buffer.from('PROXY ', 'latin1')
const V2_SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a])
const INCOMPLETE: ParseResult = { state: 'incomplete' }

const invalid = (reason: string): ParseResult => ({ state: 'invalid', reason })

/** Parses the header at the start of `buf`, which may hold only its first bytes so far. */
export function parseProxyHeader (buf: Buffer): ParseResult {
  if (buf.length === 0) return INCOMPLETE
  if (buf[0] === V1_PREFIX[0]) return parseV1(buf)
  if (buf[0] === V2_SIGNATURE[0]) return parseV2(buf)
  return invalid('no PROXY protocol header')
}

function startsLike (buf: Buffer, prefix: Buffer): boolean {
  const n = Math.min(buf.length, prefix.length)
  return buf.subarray(0, n).equals(prefix.subarray(0, n))
}

const PORT = /^(0|[1-9]\d{0,4})$/

function parsePort (text: string): number | undefined {
  if (!PORT.test(text)) return undefined
  const port = Number(text)
  return port <= 65535 ? port : undefined
}

function parseV1 (buf: Buffer): ParseResult {
  if (!startsLike(buf, V1_PREFIX)) return invalid('not a PROXY v1 header')
  const scan = Math.min(buf.length, V1_MAX_LENGTH)
  let end = -1
  for (let i = V1_PREFIX.length; i < scan; i++) {
    const byte = buf[i]
    if (byte === 0x0d) {
      end = i
      break
    }
    if (byte < 0x20 || byte > 0x7e) return invalid('PROXY v1 header holds a non-printable byte')
  }
  if (end < 0) return buf.length >= V1_MAX_LENGTH ? invalid('PROXY v1 header longer than 107 bytes') : INCOMPLETE
  if (end + 1 >= buf.length) return end + 1 >= V1_MAX_LENGTH ? invalid('PROXY v1 header longer than 107 bytes') : INCOMPLETE
  if (buf[end + 1] !== 0x0a) return invalid('PROXY v1 header not ended by CRLF')
  const length = end + 2
  const fields = buf.toString('latin1', 0, end).split(' ')
  if (fields[1] === 'UNKNOWN') return { state: 'done', header: { version: 1, length } }
  if (fields.length !== 6) return invalid('PROXY v1 header does not have 6 fields')
  const [, family, source, , sourcePort, destPort] = fields
  const valid = family === 'TCP4' ? isIPv4 : family === 'TCP6' ? isIPv6 : undefined
  if (valid === undefined) return invalid(`PROXY v1 protocol "${family}" is not TCP4, TCP6 or UNKNOWN`)
  if (!valid(source) || !valid(fields[3])) return invalid(`PROXY v1 addresses are not ${family} addresses`)
  const port = parsePort(sourcePort)
  if (port === undefined || parsePort(destPort) === undefined) return invalid('PROXY v1 ports are not 0..65535')
  return { state: 'done', header: { version: 1, peer: { address: plainAddress(source), port }, length } }
}

const AF_UNSPEC = 0
const AF_INET = 1
const AF_INET6 = 2
const AF_UNIX = 3
const STREAM = 1

function parseV2 (buf: Buffer): ParseResult {
  if (!startsLike(buf, V2_SIGNATURE)) return invalid('not a PROXY v2 header')
  if (buf.length < 16) return INCOMPLETE
  const version = buf[12] >> 4
  const command = buf[12] & 0x0f
  if (version !== 2) return invalid(`PROXY v2 header of version ${version}`)
  if (command > 1) return invalid(`PROXY v2 command ${command} is neither LOCAL nor PROXY`)
  const bodyLength = buf.readUInt16BE(14)
  if (bodyLength > V2_MAX_BODY) return invalid(`PROXY v2 header of ${bodyLength} bytes is over ${V2_MAX_BODY}`)
  const length = 16 + bodyLength
  if (buf.length < length) return INCOMPLETE
  // LOCAL: the proxy's own connection (health checks); the addresses are ignored
  if (command === 0) return { state: 'done', header: { version: 2, length } }
  const family = buf[13] >> 4
  const transport = buf[13] & 0x0f
  if (family > AF_UNIX || transport > 2) return invalid(`PROXY v2 address family byte 0x${buf[13].toString(16)} is not defined`)
  if (family === AF_UNSPEC || family === AF_UNIX) return { state: 'done', header: { version: 2, length } }
  if (transport !== STREAM) return invalid('PROXY v2 transport is not STREAM')
  const body = buf.subarray(16, length)
  if (family === AF_INET) {
    if (body.length < 12) return invalid('PROXY v2 IPv4 address block is short')
    return { state: 'done', header: { version: 2, peer: { address: Array.from(body.subarray(0, 4)).join('.'), port: body.readUInt16BE(8) }, length } }
  }
  if (family !== AF_INET6) return invalid('PROXY v2 address family is not defined')
  if (body.length < 36) return invalid('PROXY v2 IPv6 address block is short')
  return { state: 'done', header: { version: 2, peer: { address: formatIPv6(body.subarray(0, 16)), port: body.readUInt16BE(32) }, length } }
}

/** RFC 5952 text of 16 address bytes; IPv4-mapped addresses read as plain IPv4 (as `plainAddress` does). */
export function formatIPv6 (bytes: Buffer): string {
  if (bytes.subarray(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff) {
    return Array.from(bytes.subarray(12, 16)).join('.')
  }
  const groups: number[] = []
  for (let i = 0; i < 16; i += 2) groups.push(bytes.readUInt16BE(i))
  let bestStart = -1
  let bestLength = 1
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++
      continue
    }
    let j = i
    while (j < 8 && groups[j] === 0) j++
    if (j - i > bestLength) {
      bestStart = i
      bestLength = j - i
    }
    i = j
  }
  const hex = groups.map((g) => g.toString(16))
  if (bestStart < 0) return hex.join(':')
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`
}

export class ProxyProtocolError extends Error {}

/**
 * Reads the header off `socket`, then puts back whatever followed it (MQTT or a
 * TLS ClientHello) for the next reader. `callback` gets the header, or an error
 * when the connection sent something else, ended, or took over `timeoutMs`; the
 * socket is then left to the caller to close.
 */
export function readProxyHeader (socket: Socket, timeoutMs: number, callback: (err: ProxyProtocolError | null, header?: ProxyHeader) => void): void {
  let buffered: Buffer = Buffer.alloc(0)
  let finished = false
  const stop = (): boolean => {
    if (finished) return false
    finished = true
    clearTimeout(timer)
    socket.removeListener('readable', onReadable)
    socket.removeListener('end', onEnd)
    socket.removeListener('close', onEnd)
    socket.removeListener('error', onError)
    return true
  }
  const fail = (reason: string): void => {
    if (stop()) callback(new ProxyProtocolError(reason))
  }
  const onReadable = (): void => {
    let chunk: Buffer | null
    while (!finished && (chunk = socket.read() as Buffer | null) !== null) {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk])
      const result = parseProxyHeader(buffered)
      if (result.state === 'invalid') {
        fail(result.reason)
      } else if (result.state === 'done') {
        stop()
        // put back before the next reader starts, so it sees the bytes at once
        const rest = buffered.subarray(result.header.length)
        if (rest.length > 0) socket.unshift(rest)
        callback(null, result.header)
      }
    }
  }
  const onEnd = (): void => fail('connection closed before a complete PROXY protocol header')
  const onError = (err: Error): void => fail(`connection failed before a PROXY protocol header: ${err.message}`)
  const timer = setTimeout(() => fail(`no PROXY protocol header within ${timeoutMs} ms`), timeoutMs)
  socket.on('readable', onReadable)
  socket.on('end', onEnd)
  socket.on('close', onEnd)
  socket.on('error', onError)
}
