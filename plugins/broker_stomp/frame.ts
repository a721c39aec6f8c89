// STOMP frames (1.0, 1.1, 1.2): a streaming parser that takes the socket's
// bytes as they come (a frame split across reads, several frames in one
// read, end-of-line heart-beats between frames) under the stomp.frame.*
// limits, and the serializer. Header values are escaped from 1.1 on (1.2
// adds `\r`), except in CONNECT and CONNECTED frames; the first of a
// repeated header is the one that counts.

export interface StompFrame {
  command: string
  /** first occurrence wins (STOMP 1.2 §Repeated Header Entries) */
  headers: Map<string, string>
  body: Buffer
}

export interface FrameLimits {
  /** headers per frame */
  maxHeaders: number
  /** bytes of one header line (`name:value`, as sent) */
  maxHeaderLength: number
  /** bytes of a body */
  maxBodyLength: number
}

/** Why a frame was refused: `malformed` or `too_large` (the counter it goes to), and the text of the ERROR frame. */
export class FrameError extends Error {
  constructor (readonly kind: 'malformed' | 'too_large', message: string) {
    super(message)
    this.name = 'FrameError'
  }
}

export const CLIENT_COMMANDS: readonly string[] = Object.freeze(['CONNECT', 'STOMP', 'SEND', 'SUBSCRIBE', 'UNSUBSCRIBE', 'BEGIN', 'COMMIT', 'ABORT', 'ACK', 'NACK', 'DISCONNECT'])
const LONGEST_COMMAND = 11
const LF = 0x0a
const CR = 0x0d
const NUL = 0x00

/** The escapes of 1.1 (`\n`, `\c`, `\\`) and 1.2 (also `\r`). */
const ESCAPES: Readonly<Record<string, Readonly<Record<string, string>>>> = Object.freeze({
  '1.1': Object.freeze({ n: '\n', c: ':', '\\': '\\' }),
  '1.2': Object.freeze({ n: '\n', c: ':', '\\': '\\', r: '\r' })
})

type Phase = 'idle' | 'command' | 'headers' | 'body'

export class FrameParser {
  /** `1.0`, `1.1` or `1.2`: set once the version is negotiated (header escaping depends on it) */
  version = '1.0'
  #phase: Phase = 'idle'
  #pending: Buffer = Buffer.alloc(0)
  #command = ''
  #headers = new Map<string, string>()
  #headerCount = 0
  /** the body so far, and the content-length when the frame gave one */
  #body: Buffer[] = []
  #bodyBytes = 0
  #contentLength: number | undefined

  constructor (
    private readonly limits: () => FrameLimits,
    private readonly onFrame: (frame: StompFrame) => void,
    private readonly onHeartbeat: () => void
  ) {}

  /** Takes bytes from the socket; throws a FrameError for a frame it refuses (the rest of the stream is not read). */
  push (chunk: Buffer): void {
    let bytes = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk])
    this.#pending = Buffer.alloc(0)
    while (bytes.length > 0) {
      const rest = this.#step(bytes)
      if (rest === undefined) return
      bytes = rest
    }
  }

  /** One step on `bytes`; the bytes left, or undefined when it needs more (what it keeps is in #pending or the body). */
  #step (bytes: Buffer): Buffer | undefined {
    switch (this.#phase) {
      case 'idle': return this.#idle(bytes)
      case 'command': return this.#line(bytes, LONGEST_COMMAND, (line) => this.#takeCommand(line))
      case 'headers': return this.#line(bytes, this.limits().maxHeaderLength, (line) => this.#takeHeader(line))
      case 'body': return this.#takeBody(bytes)
    }
  }

  /** Between frames: an EOL is a heart-beat; anything else starts a command. */
  #idle (bytes: Buffer): Buffer | undefined {
    let at = 0
    while (at < bytes.length) {
      if (bytes[at] === LF) {
        this.onHeartbeat()
        at++
      } else if (bytes[at] === CR) {
        if (at + 1 === bytes.length) {
          this.#pending = bytes.subarray(at)
          return undefined
        }
        if (bytes[at + 1] !== LF) throw new FrameError('malformed', 'a CR not followed by LF between frames')
        this.onHeartbeat()
        at += 2
      } else {
        this.#phase = 'command'
        return bytes.subarray(at)
      }
    }
    return undefined
  }

  /** A line ending in LF (a CR before it is dropped); a line over `longest` bytes is refused before its end comes. */
  #line (bytes: Buffer, longest: number, take: (line: Buffer) => void): Buffer | undefined {
    const end = bytes.indexOf(LF)
    if (end < 0) {
      // room for the CR of a CR LF
      if (bytes.length > longest + 1) this.#tooLong()
      this.#pending = bytes
      return undefined
    }
    let line = bytes.subarray(0, end)
    if (line.length > 0 && line[line.length - 1] === CR) line = line.subarray(0, -1)
    if (line.length > longest) this.#tooLong()
    take(line)
    return bytes.subarray(end + 1)
  }

  #tooLong (): never {
    if (this.#phase === 'command') throw new FrameError('malformed', 'not a STOMP command')
    throw new FrameError('too_large', `a header is longer than ${this.limits().maxHeaderLength} bytes (stomp.frame.max_header_length)`)
  }

  #takeCommand (line: Buffer): void {
    const command = line.toString('latin1')
    if (!CLIENT_COMMANDS.includes(command)) throw new FrameError('malformed', `unknown command ${JSON.stringify(command.slice(0, 32))}`)
    this.#command = command
    this.#headers = new Map()
    this.#headerCount = 0
    this.#phase = 'headers'
  }

  #takeHeader (line: Buffer): void {
    if (line.length === 0) {
      this.#startBody()
      return
    }
    if (++this.#headerCount > this.limits().maxHeaders) {
      throw new FrameError('too_large', `more than ${this.limits().maxHeaders} headers (stomp.frame.max_headers)`)
    }
    const colon = line.indexOf(0x3a)
    if (colon <= 0) throw new FrameError('malformed', colon === 0 ? 'a header with an empty name' : 'a header line without a colon')
    const name = this.#decode(line.subarray(0, colon))
    const value = this.#decode(line.subarray(colon + 1))
    if (!this.#headers.has(name)) this.#headers.set(name, value)
  }

  /** UTF-8 text of a header name or value, unescaped from 1.1 on (never in CONNECT). */
  #decode (bytes: Buffer): string {
    const text = bytes.toString('utf8')
    const escapes = ESCAPES[this.version]
    if (escapes === undefined || this.#command === 'CONNECT' || this.#command === 'STOMP' || !text.includes('\\')) return text
    return text.replace(/\\(.?)/gs, (_all, ch: string) => {
      const plain = escapes[ch]
      if (plain === undefined) throw new FrameError('malformed', `an undefined escape sequence \\${ch} in a header`)
      return plain
    })
  }

  #startBody (): void {
    const limit = this.limits().maxBodyLength
    const declared = this.#headers.get('content-length')
    this.#contentLength = undefined
    if (declared !== undefined) {
      if (!/^\d{1,15}$/.test(declared.trim())) throw new FrameError('malformed', `content-length ${JSON.stringify(declared.slice(0, 32))} is not a byte count`)
      this.#contentLength = Number(declared.trim())
      if (this.#contentLength > limit) throw new FrameError('too_large', `a body of ${this.#contentLength} bytes is over ${limit} (stomp.frame.max_body_length)`)
    }
    this.#body = []
    this.#bodyBytes = 0
    this.#phase = 'body'
  }

  #takeBody (bytes: Buffer): Buffer | undefined {
    const length = this.#contentLength
    if (length !== undefined) {
      const want = length - this.#bodyBytes
      if (bytes.length <= want) {
        this.#keep(bytes)
        return undefined
      }
      if (bytes[want] !== NUL) throw new FrameError('malformed', `no NUL after the ${length} bytes of content-length`)
      this.#keep(bytes.subarray(0, want))
      this.#emit()
      return bytes.subarray(want + 1)
    }
    const end = bytes.indexOf(NUL)
    const limit = this.limits().maxBodyLength
    if (end < 0) {
      if (this.#bodyBytes + bytes.length > limit) throw new FrameError('too_large', `a body over ${limit} bytes (stomp.frame.max_body_length)`)
      this.#keep(bytes)
      return undefined
    }
    if (this.#bodyBytes + end > limit) throw new FrameError('too_large', `a body over ${limit} bytes (stomp.frame.max_body_length)`)
    this.#keep(bytes.subarray(0, end))
    this.#emit()
    return bytes.subarray(end + 1)
  }

  #keep (bytes: Buffer): void {
    if (bytes.length === 0) return
    // a copy: the socket's chunk is not kept alive by a small body
    this.#body.push(Buffer.from(bytes))
    this.#bodyBytes += bytes.length
  }

  #emit (): void {
    const frame: StompFrame = { command: this.#command, headers: this.#headers, body: this.#body.length === 1 ? this.#body[0] : Buffer.concat(this.#body) }
    this.#body = []
    this.#bodyBytes = 0
    this.#phase = 'idle'
    this.onFrame(frame)
  }
}

/** `\`, LF, `:` (and CR in 1.2) escaped, for versions from 1.1 on. */
function escape (text: string, version: string): string {
  if (!/[\\\n:\r]/.test(text)) return text
  let out = text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/:/g, '\\c')
  if (version === '1.2') out = out.replace(/\r/g, '\\r')
  return out
}

/**
 * A frame's bytes; `content-length` is added for a body (MESSAGE and ERROR
 * bodies may hold NULs). Headers are escaped from 1.1 on, except in CONNECTED.
 */
export function serialize (command: string, headers: ReadonlyArray<readonly [string, string]>, body: Buffer = Buffer.alloc(0), version = '1.0'): Buffer {
  const escaping = version !== '1.0' && command !== 'CONNECTED'
  let head = `${command}\n`
  for (const [name, value] of headers) {
    // 1.0 cannot escape: a line break in a value would end the header early, so it is flattened
    head += escaping ? `${escape(name, version)}:${escape(value, version)}\n` : `${flat(name)}:${flat(value)}\n`
  }
  if (body.length > 0) head += `content-length:${body.length}\n`
  head += '\n'
  return Buffer.concat([Buffer.from(head), body, Buffer.from([NUL])])
}

function flat (text: string): string {
  return /[\r\n]/.test(text) ? text.replace(/[\r\n]/g, ' ') : text
}
