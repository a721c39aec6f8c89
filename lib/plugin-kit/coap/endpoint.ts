// A CoAP endpoint (RFC 7252 §4, RFC 7959) over any datagram transport: it
// is given each datagram with its peer (`receive`) and a `send` function,
// so a UDP socket (or a DTLS session) carries it. It answers requests
// through one handler and sends messages of its own:
// - requests: deduplicated by message id for EXCHANGE_LIFETIME (a duplicate
//   CON gets the same answer again, a duplicate NON nothing), a CON
//   answered by a piggybacked ACK, a NON by a NON (none for the classes a
//   No-Response option refuses, RFC 7967); Empty CON (ping) → RST;
//   a malformed datagram is dropped (a CON whose header was readable gets
//   RST); an unknown critical option → 4.02;
// - Block1 (RFC 7959 §2.5): blocks put together per peer and URI, 2.31
//   Continue for each, the handler gets the whole body;
// - Block2: a payload larger than a block (or than the block size the
//   peer asked for) goes out block by block, the representation kept for
//   the peer's follow-up requests (with an ETag, Size2 on block 0); so do
//   the endpoint's own messages (observe notifications);
// - its CON messages: one outstanding per peer (NSTART 1), retransmitted with
//   the RFC's exponential back-off until ACK or RST or MAX_RETRANSMIT;
//   NON messages answered by RST are reported too.
// Every store is bounded (entries and bytes) and forgets entries after their lifetime.
import { randomBytes } from 'node:crypto'
import { Block1Assembler, blockOption, blockSize, BoundedStore, MAX_SZX, readBlock, sliceBlock, type Block } from './block.js'
import { CODE, CoapFormatError, isRequest, isResponse, option, OPTION, parse, serialize, TYPE, uint, uintOption, unknownCritical, uriOf, type CoapMessage, type CoapOption, type CoapType } from './message.js'
import { DEFAULT_TRANSMISSION, exchangeLifetime, initialTimeout, nonLifetime, type TransmissionParameters } from './transmission.js'

export interface CoapPeer { address: string, port: number }

export function peerKey (peer: CoapPeer): string {
  return `${peer.address}|${peer.port}`
}

/** A request as the handler sees it: the whole body (Block1 put together). */
export interface CoapRequest {
  peer: CoapPeer
  /** the request's message (the last block's, with the whole body as payload) */
  message: CoapMessage
  method: number
  confirmable: boolean
  path: string[]
  query: string[]
  payload: Buffer
  /** the Observe option: 0 register, 1 deregister (RFC 7641) */
  observe: number | undefined
  /** the block size the peer asked for in Block2 (early negotiation), as SZX */
  block2Szx: number | undefined
  /** the peer and the request URI: the key of its Block1/Block2 state */
  uriKey: string
  /** bytes of the datagram (the last block's) */
  size: number
}

export interface CoapResponse {
  code: number
  options?: CoapOption[]
  payload?: Buffer | string
}

/** Answers a request once (later calls are ignored). */
export type Respond = (response: CoapResponse) => void

export interface EndpointTimers {
  setTimeout: (run: () => void, ms: number) => { cancel: () => void }
  setInterval: (run: () => void, ms: number) => { cancel: () => void }
}

export interface EndpointCounter { inc: (by?: number) => void }

export interface EndpointCounters {
  received?: EndpointCounter
  sent?: EndpointCounter
  /** datagrams dropped as malformed */
  malformed?: EndpointCounter
  /** duplicate requests (answered again, not handled again) */
  duplicate?: EndpointCounter
  /** CON retransmissions */
  retransmitted?: EndpointCounter
  /** requests refused as too large (4.13) */
  tooLarge?: EndpointCounter
}

export interface EndpointLimits {
  /** the largest request body taken in (one datagram or Block1 blocks): larger is 4.13 */
  maxBody: number
  /** message ids remembered for deduplication (default 20 000) */
  dedupEntries?: number
  /** bytes of answers kept for duplicates (default 16 MiB) */
  dedupBytes?: number
  /** Block1 bodies being put together at once, and their bytes (default 256, 32 MiB) */
  block1Entries?: number
  block1Bytes?: number
  /** representations kept for Block2 follow-ups, and their bytes (default 1024, 32 MiB) */
  block2Entries?: number
  block2Bytes?: number
  /** CON messages waiting behind the outstanding one, per peer (default 256): more are dropped */
  queuePerPeer?: number
}

export interface EndpointOptions {
  send: (datagram: Buffer, peer: CoapPeer) => void
  timers: EndpointTimers
  onRequest: (request: CoapRequest, respond: Respond) => void
  limits: EndpointLimits
  /** read at each CON sent: a change applies to the next one */
  transmission?: () => TransmissionParameters
  counters?: EndpointCounters
  /** a handler or send that threw */
  onError?: (err: unknown) => void
}

/** How a message the endpoint sent ended. */
export type SendOutcome =
  | { kind: 'ack', message: CoapMessage }
  | { kind: 'reset' }
  /** no ACK after MAX_RETRANSMIT retransmissions */
  | { kind: 'timeout' }
  /** the peer's queue is full, or the endpoint closed */
  | { kind: 'dropped' }
  /** a NON went out */
  | { kind: 'sent' }

export interface OutgoingMessage {
  type: typeof TYPE.CON | typeof TYPE.NON
  code: number
  token?: Buffer
  options?: CoapOption[]
  payload?: Buffer
}

export interface SendOptions {
  /** a payload over one block goes out block-wise: the block size (SZX, default 6) and the key its Block2 follow-ups come with (a request's uriKey) */
  szx?: number
  block2Key?: string
  /** a NON: called if the peer answers it with RST (within NON_LIFETIME) */
  onReset?: () => void
  /**
   * the Observe option's value, asked when the message first goes out (a CON
   * may wait behind another to the same peer): notifications numbered in the
   * order they leave, which is the order a client accepts them (RFC 7641 §3.4)
   */
  observe?: () => number
}

interface DedupEntry { answer: Buffer | undefined, confirmable: boolean }
interface Representation { body: Buffer, code: number, options: CoapOption[], etag: Buffer }
interface Outstanding { peer: CoapPeer, bytes: Buffer, messageId: number, attempts: number, timeout: number, timer: { cancel: () => void } | undefined, settle: (outcome: SendOutcome) => void }
/** `busy`: a CON is outstanding, or the slot was handed to the next one waiting (which goes on in a later turn) */
interface PeerQueue { busy: boolean, waiting: Array<() => void> }
interface Awaiting { settle: (message: CoapMessage | Error) => void }

const SWEEP_MS = 10_000
/** RFC 7967 No-Response bits by response class: 2 suppresses 2.xx, 8 4.xx, 16 5.xx */
const NO_RESPONSE_BITS: Readonly<Record<number, number>> = Object.freeze({ 2: 2, 4: 8, 5: 16 })
/** options the endpoint writes itself on blocks of a representation */
const BLOCK_OWN: ReadonlySet<number> = new Set([OPTION.BLOCK2, OPTION.SIZE2, OPTION.ETAG])

export class CoapEndpoint {
  readonly #options: EndpointOptions
  readonly #dedup: BoundedStore<DedupEntry>
  readonly #block1: Block1Assembler
  readonly #block2: BoundedStore<Representation>
  readonly #nonSent: BoundedStore<() => void>
  /** CON messages sent, by peer|message id */
  readonly #outstanding = new Map<string, Outstanding>()
  readonly #peers = new Map<string, PeerQueue>()
  /** requests of ours awaiting a separate response, by peer|token */
  readonly #awaiting = new Map<string, Awaiting>()
  readonly #sweep: { cancel: () => void }
  readonly #queuePerPeer: number
  #messageId = randomBytes(2).readUInt16BE(0)
  #etag = randomBytes(4).readUInt32BE(0)
  #closed = false

  constructor (options: EndpointOptions) {
    this.#options = options
    const limits = options.limits
    const p = this.#transmission()
    this.#dedup = new BoundedStore({ entries: limits.dedupEntries ?? 20_000, bytes: limits.dedupBytes ?? 16 * 1024 * 1024, lifetimeMs: exchangeLifetime(p) })
    this.#block1 = new Block1Assembler(limits.maxBody, { entries: limits.block1Entries ?? 256, bytes: limits.block1Bytes ?? 32 * 1024 * 1024, lifetimeMs: exchangeLifetime(p) })
    this.#block2 = new BoundedStore({ entries: limits.block2Entries ?? 1024, bytes: limits.block2Bytes ?? 32 * 1024 * 1024, lifetimeMs: exchangeLifetime(p) })
    this.#nonSent = new BoundedStore({ entries: 10_000, bytes: 10_000, lifetimeMs: nonLifetime(p) })
    this.#queuePerPeer = limits.queuePerPeer ?? 256
    this.#sweep = options.timers.setInterval(() => {
      const now = Date.now()
      this.#dedup.sweep(now)
      this.#block1.sweep(now)
      this.#block2.sweep(now)
      this.#nonSent.sweep(now)
    }, SWEEP_MS)
  }

  /** What the stores hold now (for tests and listings). */
  get state (): { dedup: number, block1: number, block2: number, outstanding: number, peers: number } {
    return { dedup: this.#dedup.size, block1: this.#block1.size, block2: this.#block2.size, outstanding: this.#outstanding.size, peers: this.#peers.size }
  }

  /** Stops: every pending send ends `dropped`, every request of ours fails. */
  close (): void {
    if (this.#closed) return
    this.#closed = true
    this.#sweep.cancel()
    for (const out of [...this.#outstanding.values()]) out.settle({ kind: 'dropped' })
    for (const queue of this.#peers.values()) for (const wake of queue.waiting.splice(0)) wake()
    for (const awaiting of [...this.#awaiting.values()]) awaiting.settle(new Error('the endpoint closed'))
    this.#dedup.clear()
    this.#block1.clear()
    this.#block2.clear()
    this.#nonSent.clear()
  }

  // ---- datagrams in ---------------------------------------------------------

  receive (datagram: Buffer, peer: CoapPeer): void {
    if (this.#closed) return
    this.#options.counters?.received?.inc()
    let message: CoapMessage
    try {
      message = parse(datagram)
    } catch (err) {
      if (!(err instanceof CoapFormatError)) throw err
      this.#options.counters?.malformed?.inc()
      // a CON that cannot be processed is rejected with RST (RFC 7252 §4.2)
      if (err.type === TYPE.CON && err.messageId !== undefined) this.#reset(peer, err.messageId)
      return
    }
    try {
      this.#message(message, peer, datagram.length)
    } catch (err) {
      this.#options.onError?.(err)
    }
  }

  #message (message: CoapMessage, peer: CoapPeer, size: number): void {
    if (message.type === TYPE.ACK || message.type === TYPE.RST) {
      this.#answer(message, peer)
      return
    }
    if (message.code === CODE.EMPTY) {
      // CoAP ping (an Empty CON) is answered with RST; an Empty NON means nothing
      if (message.type === TYPE.CON) this.#reset(peer, message.messageId)
      return
    }
    if (isResponse(message.code)) {
      this.#separateResponse(message, peer)
      return
    }
    if (!isRequest(message.code)) {
      // reserved classes (1, 6, 7): a message format error
      this.#options.counters?.malformed?.inc()
      if (message.type === TYPE.CON) this.#reset(peer, message.messageId)
      return
    }
    const dedupKey = `${peerKey(peer)}|${message.messageId}`
    const seen = this.#dedup.get(dedupKey)
    if (seen !== undefined) {
      this.#options.counters?.duplicate?.inc()
      // the same ACK again; while the first copy is being handled, nothing (the peer retransmits)
      if (seen.confirmable && seen.answer !== undefined) this.#write(seen.answer, peer)
      return
    }
    const confirmable = message.type === TYPE.CON
    const entry: DedupEntry = { answer: undefined, confirmable }
    this.#dedup.set(dedupKey, entry, 0)
    const noResponse = uint(message, OPTION.NO_RESPONSE)
    this.#request(message, peer, size, (response) => {
      // RFC 7967: the classes the client is not interested in are not sent (a CON still gets its ACK, empty)
      if (noResponse !== undefined && (noResponse & NO_RESPONSE_BITS[response.code >> 5]) !== 0) {
        if (!confirmable) return
        response = { code: CODE.EMPTY }
      }
      const bytes = serialize({
        type: confirmable ? TYPE.ACK : TYPE.NON,
        code: response.code,
        messageId: confirmable ? message.messageId : this.#nextMessageId(peer),
        token: response.code === CODE.EMPTY ? Buffer.alloc(0) : message.token,
        options: response.options ?? [],
        payload: toBuffer(response.payload)
      })
      if (confirmable) {
        entry.answer = bytes
        // the answer's bytes count against the store's budget
        this.#dedup.set(dedupKey, entry, bytes.length)
      }
      this.#write(bytes, peer)
    })
  }

  /** ACK or RST to a message of ours. */
  #answer (message: CoapMessage, peer: CoapPeer): void {
    const key = `${peerKey(peer)}|${message.messageId}`
    const out = this.#outstanding.get(key)
    if (out !== undefined) {
      out.settle(message.type === TYPE.ACK ? { kind: 'ack', message } : { kind: 'reset' })
      return
    }
    if (message.type === TYPE.RST) {
      const onReset = this.#nonSent.get(key)
      this.#nonSent.delete(key)
      onReset?.()
    }
  }

  /** A response in a CON or NON: the separate answer to a request of ours (RFC 7252 §5.2.2). */
  #separateResponse (message: CoapMessage, peer: CoapPeer): void {
    const awaiting = this.#awaiting.get(`${peerKey(peer)}|${message.token.toString('hex')}`)
    if (message.type === TYPE.CON) {
      if (awaiting === undefined) {
        this.#reset(peer, message.messageId)
        return
      }
      this.#write(serialize({ type: TYPE.ACK, code: CODE.EMPTY, messageId: message.messageId, token: Buffer.alloc(0), options: [], payload: Buffer.alloc(0) }), peer)
    }
    awaiting?.settle(message)
  }

  #reset (peer: CoapPeer, messageId: number): void {
    this.#write(serialize({ type: TYPE.RST, code: CODE.EMPTY, messageId, token: Buffer.alloc(0), options: [], payload: Buffer.alloc(0) }), peer)
  }

  // ---- requests -------------------------------------------------------------

  #request (message: CoapMessage, peer: CoapPeer, size: number, reply: (response: CoapResponse) => void): void {
    let answered = false
    const once: Respond = (response) => {
      if (answered || this.#closed) return
      answered = true
      try {
        reply(response)
      } catch (err) {
        this.#options.onError?.(err)
      }
    }
    const critical = unknownCritical(message)
    if (critical !== undefined) {
      once({ code: CODE.BAD_OPTION, payload: `unknown critical option ${critical}` })
      return
    }
    const { path, query } = uriOf(message)
    const uriKey = `${peerKey(peer)}|${message.code}|${path.join('/')}?${query.join('&')}`
    const block2Value = option(message, OPTION.BLOCK2)
    const block2 = block2Value === undefined ? undefined : readBlock(block2Value)
    if (block2Value !== undefined && block2 === undefined) {
      once({ code: CODE.BAD_OPTION, payload: 'Block2 is not valid' })
      return
    }
    // a follow-up for the next block of a representation kept for this peer and URI
    const getKey = `${peerKey(peer)}|${CODE.GET}|${path.join('/')}?${query.join('&')}`
    if (block2 !== undefined && block2.num > 0 && message.code === CODE.GET) {
      const kept = this.#block2.get(getKey)
      if (kept !== undefined) {
        once(this.#block(kept, block2.num, block2.szx) ?? { code: CODE.BAD_OPTION, payload: `no block ${block2.num}` })
        return
      }
    }
    const request: CoapRequest = {
      peer,
      message,
      method: message.code,
      confirmable: message.type === TYPE.CON,
      path,
      query,
      payload: message.payload,
      observe: uint(message, OPTION.OBSERVE),
      block2Szx: block2 === undefined ? undefined : Math.min(block2.szx, MAX_SZX),
      uriKey: getKey,
      size
    }
    const maxBody = this.#block1.maxBody
    const tooLarge = (why: string): void => {
      this.#options.counters?.tooLarge?.inc()
      once({ code: CODE.REQUEST_ENTITY_TOO_LARGE, options: [{ number: OPTION.SIZE1, value: uintOption(maxBody) }], payload: why })
    }
    // a response with a body over one block goes out block-wise, from block `num` asked for
    const respond: Respond = (response) => once(this.#maybeBlock(response, getKey, block2?.num ?? 0, request.block2Szx ?? MAX_SZX, message.code === CODE.GET))
    const block1Value = option(message, OPTION.BLOCK1)
    if (block1Value === undefined) {
      if (message.payload.length > maxBody) {
        tooLarge(`the body is over ${maxBody} bytes`)
        return
      }
      this.#handle(request, respond)
      return
    }
    const block1 = readBlock(block1Value)
    if (block1 === undefined) {
      once({ code: CODE.BAD_OPTION, payload: 'Block1 is not valid' })
      return
    }
    const step = this.#block1.add(uriKey, block1, message.payload, uint(message, OPTION.SIZE1))
    const ours: Block = { num: block1.num, more: block1.more, szx: Math.min(block1.szx, MAX_SZX) }
    switch (step.kind) {
      case 'continue':
        once({ code: CODE.CONTINUE, options: [{ number: OPTION.BLOCK1, value: blockOption({ ...ours, more: true }) }] })
        return
      case 'incomplete':
        once({ code: CODE.REQUEST_ENTITY_INCOMPLETE, payload: step.why })
        return
      case 'too_large':
        tooLarge(step.why)
        return
      case 'complete': {
        request.payload = step.body
        // the final answer carries the last Block1 (M=0) back (RFC 7959 §2.3)
        this.#handle(request, (response) => respond({ ...response, options: [...(response.options ?? []), { number: OPTION.BLOCK1, value: blockOption({ ...ours, more: false }) }] }))
      }
    }
  }

  #handle (request: CoapRequest, respond: Respond): void {
    try {
      this.#options.onRequest(request, respond)
    } catch (err) {
      this.#options.onError?.(err)
      respond({ code: CODE.INTERNAL_SERVER_ERROR })
    }
  }

  /** The response itself, or block `num` of it when its body is over a block of `szx`; the representation is kept for follow-ups of a GET. */
  #maybeBlock (response: CoapResponse, key: string, num: number, szx: number, keep: boolean): CoapResponse {
    const body = toBuffer(response.payload)
    if (body.length <= blockSize(szx) && num === 0) return response
    const kept = this.#represent(response.code, response.options ?? [], body)
    if (keep) this.#block2.set(key, kept, body.length)
    return this.#block(kept, num, szx) ?? { code: CODE.BAD_OPTION, payload: `no block ${num}` }
  }

  #represent (code: number, options: CoapOption[], body: Buffer): Representation {
    this.#etag = (this.#etag + 1) >>> 0
    return { body, code, options: options.filter((o) => !BLOCK_OWN.has(o.number)), etag: uintOption(this.#etag).length === 0 ? Buffer.from([0]) : uintOption(this.#etag) }
  }

  /** Block `num` of a representation (Size2 on block 0), or undefined past its end. */
  #block (kept: Representation, num: number, szx: number): CoapResponse | undefined {
    const slice = sliceBlock(kept.body, num, szx)
    if (slice === undefined) return undefined
    const options: CoapOption[] = [
      ...(num === 0 ? kept.options : kept.options.filter((o) => o.number !== OPTION.OBSERVE)),
      { number: OPTION.ETAG, value: kept.etag },
      { number: OPTION.BLOCK2, value: blockOption({ num, more: slice.more, szx }) }
    ]
    if (num === 0) options.push({ number: OPTION.SIZE2, value: uintOption(kept.body.length) })
    return { code: kept.code, options, payload: slice.payload }
  }

  // ---- messages of ours -----------------------------------------------------

  /**
   * Sends a CON (resolves once ACKed, reset, timed out after the
   * retransmissions, or dropped) or a NON (resolves `sent`). A payload over
   * one block goes as block 0 with Block2, the rest kept for the peer's
   * follow-ups under `block2Key`.
   */
  async send (peer: CoapPeer, outgoing: OutgoingMessage, options: SendOptions = {}): Promise<SendOutcome> {
    if (this.#closed) return { kind: 'dropped' }
    let code = outgoing.code
    let messageOptions = outgoing.options ?? []
    let payload = outgoing.payload ?? Buffer.alloc(0)
    const szx = Math.min(options.szx ?? MAX_SZX, MAX_SZX)
    if (payload.length > blockSize(szx)) {
      const kept = this.#represent(code, messageOptions, payload)
      if (options.block2Key !== undefined) this.#block2.set(options.block2Key, kept, payload.length)
      const first = this.#block(kept, 0, szx)!
      code = first.code
      messageOptions = first.options ?? []
      payload = toBuffer(first.payload)
    }
    const observe = options.observe
    const message = (messageId: number): Buffer => serialize({
      type: outgoing.type,
      code,
      messageId,
      token: outgoing.token ?? Buffer.alloc(0),
      options: observe === undefined ? messageOptions : [...messageOptions, { number: OPTION.OBSERVE, value: uintOption(observe()) }],
      payload
    })
    if (outgoing.type === TYPE.NON) {
      const messageId = this.#nextMessageId(peer)
      if (options.onReset !== undefined) this.#nonSent.set(`${peerKey(peer)}|${messageId}`, options.onReset, 1)
      this.#write(message(messageId), peer)
      return { kind: 'sent' }
    }
    return await this.#confirmable(peer, message)
  }

  /** An Empty CON (CoAP ping): true when the peer answered (RST or ACK). */
  async ping (peer: CoapPeer): Promise<boolean> {
    if (this.#closed) return false
    const outcome = await this.#confirmable(peer, (messageId) => serialize({ type: TYPE.CON, code: CODE.EMPTY, messageId, token: Buffer.alloc(0), options: [], payload: Buffer.alloc(0) }))
    return outcome.kind === 'ack' || outcome.kind === 'reset'
  }

  /**
   * A request of ours (the endpoint as a client, e.g. an LwM2M server to its
   * device): resolves with the response, piggybacked or separate; rejects
   * when reset, not acknowledged, or unanswered within `timeoutMs`.
   */
  async request (peer: CoapPeer, request: { code: number, confirmable?: boolean, options?: CoapOption[], payload?: Buffer }, timeoutMs = 30_000): Promise<CoapMessage> {
    const token = randomBytes(4)
    const key = `${peerKey(peer)}|${token.toString('hex')}`
    const answer = new Promise<CoapMessage>((resolve, reject) => {
      const timer = this.#options.timers.setTimeout(() => this.#awaiting.get(key)?.settle(new Error(`no response within ${timeoutMs} ms`)), timeoutMs)
      this.#awaiting.set(key, {
        settle: (result) => {
          this.#awaiting.delete(key)
          timer.cancel()
          if (result instanceof Error) reject(result)
          else resolve(result)
        }
      })
    })
    // its timer may reject it while the CON below is still being retransmitted: handled now, or it
    // would be an unhandled rejection and stop the node
    answer.catch(() => {})
    const outcome = await this.send(peer, { type: request.confirmable === false ? TYPE.NON : TYPE.CON, code: request.code, token, options: request.options, payload: request.payload })
    const awaiting = this.#awaiting.get(key)
    if (outcome.kind === 'ack' && outcome.message.code !== CODE.EMPTY) awaiting?.settle(outcome.message)
    else if (outcome.kind === 'reset' || outcome.kind === 'timeout' || outcome.kind === 'dropped') awaiting?.settle(new Error(`the request was ${outcome.kind === 'reset' ? 'reset' : outcome.kind === 'timeout' ? 'not acknowledged' : 'dropped'}`))
    return await answer
  }

  /** A CON through the peer's queue: one outstanding per peer (NSTART 1). */
  async #confirmable (peer: CoapPeer, build: (messageId: number) => Buffer): Promise<SendOutcome> {
    const pk = peerKey(peer)
    let queue = this.#peers.get(pk)
    if (queue === undefined) {
      queue = { busy: false, waiting: [] }
      this.#peers.set(pk, queue)
    }
    const own = queue
    if (own.busy) {
      if (own.waiting.length >= this.#queuePerPeer) return { kind: 'dropped' }
      // the one before hands its slot over when it ends
      await new Promise<void>((resolve) => own.waiting.push(resolve))
      if (this.#closed) return { kind: 'dropped' }
    } else {
      own.busy = true
    }
    const release = (): void => {
      const next = own.waiting.shift()
      if (next !== undefined) {
        next()
        return
      }
      own.busy = false
      if (this.#peers.get(pk) === own) this.#peers.delete(pk)
    }
    const messageId = this.#nextMessageId(peer)
    const key = `${pk}|${messageId}`
    let bytes: Buffer
    try {
      bytes = build(messageId)
    } catch (err) {
      release()
      throw err
    }
    const p = this.#transmission()
    return await new Promise<SendOutcome>((resolve) => {
      const out: Outstanding = {
        peer,
        bytes,
        messageId,
        attempts: 0,
        timeout: initialTimeout(p),
        timer: undefined,
        settle: (outcome) => {
          if (this.#outstanding.get(key) !== out) return
          this.#outstanding.delete(key)
          out.timer?.cancel()
          release()
          resolve(outcome)
        }
      }
      this.#outstanding.set(key, out)
      this.#transmit(out)
    })
  }

  #transmit (out: Outstanding): void {
    this.#write(out.bytes, out.peer)
    out.timer = this.#options.timers.setTimeout(() => {
      if (out.attempts >= this.#transmission().maxRetransmit) {
        out.settle({ kind: 'timeout' })
        return
      }
      out.attempts++
      out.timeout *= 2
      this.#options.counters?.retransmitted?.inc()
      this.#transmit(out)
    }, out.timeout)
  }

  /** A message id not outstanding towards this peer. */
  #nextMessageId (peer: CoapPeer): number {
    const pk = peerKey(peer)
    for (let tries = 0; tries < 0x10000; tries++) {
      this.#messageId = (this.#messageId + 1) & 0xffff
      if (!this.#outstanding.has(`${pk}|${this.#messageId}`)) return this.#messageId
    }
    return this.#messageId
  }

  #transmission (): TransmissionParameters {
    return this.#options.transmission?.() ?? DEFAULT_TRANSMISSION
  }

  #write (bytes: Buffer, peer: CoapPeer): void {
    this.#options.counters?.sent?.inc()
    try {
      this.#options.send(bytes, peer)
    } catch (err) {
      this.#options.onError?.(err)
    }
  }
}

function toBuffer (payload: Buffer | string | undefined): Buffer {
  if (payload === undefined) return Buffer.alloc(0)
  return typeof payload === 'string' ? Buffer.from(payload) : payload
}

export type { CoapType }
