// The CoAP peers of broker_coap's tests: Debian's libcoap `coap-client`
// (libcoap3-bin, the build without DTLS), the npm `coap` package's client,
// and a raw UDP socket speaking the kit's codec for what no client sends on
// purpose (duplicates, malformed datagrams, withheld ACKs).
import { execFile, spawn } from 'node:child_process'
import { createSocket, type Socket } from 'node:dgram'
import { once } from 'node:events'
import coapPackage from 'coap'
import { coap } from '../../../lib/plugin-kit/index.js'

export const COAP_CLIENT = 'coap-client-notls'

export interface CliResult { code: number | null, stdout: string, stderr: string }

/** One coap-client run, e.g. `['-m', 'put', '-e', 'x', url]`. */
export async function coapClient (args: string[], timeoutMs = 30_000): Promise<CliResult> {
  return await new Promise((resolve) => {
    execFile(COAP_CLIENT, args, { timeout: timeoutMs }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : (err as { code?: number }).code ?? null, stdout, stderr })
    })
  })
}

/** `coap-client -m get -s <seconds> <url>`: an observer whose output grows as notifications come. */
export class CliObserver {
  stdout = ''
  stderr = ''
  readonly done: Promise<void>
  readonly #child

  constructor (url: string, seconds: number, extra: string[] = []) {
    this.#child = spawn(COAP_CLIENT, ['-m', 'get', '-s', String(seconds), ...extra, url], { stdio: ['ignore', 'pipe', 'pipe'] })
    this.#child.stdout.on('data', (chunk: Buffer) => { this.stdout += chunk.toString() })
    this.#child.stderr.on('data', (chunk: Buffer) => { this.stderr += chunk.toString() })
    this.done = once(this.#child, 'close').then(() => {})
  }

  stop (): void {
    this.#child.kill()
  }
}

/** A request of the npm `coap` package's client; resolves with the response code and payload. */
/** `block1Szx`: the client sends the payload in Block1 blocks of that size (the package's segmented transmission). */
export async function npmRequest (port: number, params: { method: 'GET' | 'PUT' | 'POST', path: string, query: string, payload?: Buffer | string, confirmable?: boolean, block1Szx?: number }): Promise<{ code: string, payload: Buffer }> {
  const agent = new coapPackage.Agent({ type: 'udp4' })
  try {
    return await new Promise((resolve, reject) => {
      const req = coapPackage.request({ hostname: '127.0.0.1', port, method: params.method, pathname: params.path, query: params.query, confirmable: params.confirmable ?? true, agent })
      if (params.block1Szx !== undefined) req.setOption('Block1', Buffer.from([params.block1Szx]))
      req.on('response', (res: { code: string, payload: Buffer }) => resolve({ code: res.code, payload: res.payload }))
      req.on('error', reject)
      req.end(params.payload)
    })
  } finally {
    agent.close()
  }
}

/** An observation by the npm `coap` package's client: its notifications' payloads, and closing it. */
export async function npmObserve (port: number, path: string, query: string): Promise<{ code: string, payloads: string[], next: (count: number) => Promise<void>, close: () => void }> {
  return await new Promise((resolve, reject) => {
    const agent = new coapPackage.Agent({ type: 'udp4' })
    const req = coapPackage.request({ hostname: '127.0.0.1', port, method: 'GET', pathname: path, query, observe: true, agent })
    req.on('error', reject)
    req.on('response', (res: NodeJS.ReadableStream & { code: string, close: () => void }) => {
      const payloads: string[] = []
      const waiters: Array<{ count: number, resolve: () => void }> = []
      res.on('data', (chunk: Buffer) => {
        // the registration's own (empty) 2.05 is data too
        if (chunk.length === 0) return
        payloads.push(chunk.toString())
        for (const w of waiters.splice(0)) if (payloads.length >= w.count) w.resolve(); else waiters.push(w)
      })
      resolve({
        code: res.code,
        payloads,
        next: async (count) => { if (payloads.length < count) await new Promise<void>((resolve) => waiters.push({ count, resolve })) },
        close: () => {
          try {
            res.close()
            agent.close()
          } catch {
            // closed already
          }
        }
      })
    })
    req.end()
  })
}

/** A raw CoAP peer on its own UDP socket: sends messages (or any bytes), awaits what comes back. */
export class RawCoap {
  readonly socket: Socket = createSocket('udp4')
  readonly received: coap.CoapMessage[] = []
  readonly #waiters: Array<{ match: (m: coap.CoapMessage) => boolean, resolve: (m: coap.CoapMessage) => void }> = []
  readonly #taken = new Set<coap.CoapMessage>()
  #messageId = 1000

  constructor (readonly port: number) {
    this.socket.on('message', (bytes) => {
      const message = coap.parse(bytes)
      this.received.push(message)
      const at = this.#waiters.findIndex((w) => w.match(message))
      if (at < 0) return
      this.#taken.add(message)
      this.#waiters.splice(at, 1)[0].resolve(message)
    })
  }

  nextId (): number {
    return ++this.#messageId
  }

  sendBytes (bytes: Buffer): void {
    this.socket.send(bytes, this.port, '127.0.0.1')
  }

  send (message: Partial<coap.CoapMessage> & { code: number }): coap.CoapMessage {
    const full: coap.CoapMessage = { type: coap.TYPE.CON, messageId: this.nextId(), token: Buffer.alloc(0), options: [], payload: Buffer.alloc(0), ...message }
    this.sendBytes(coap.serialize(full))
    return full
  }

  /** A request to coap://…/<path>?<query…>. */
  request (method: number, path: string[], query: string[], extra: Partial<coap.CoapMessage> = {}, options: coap.CoapOption[] = []): coap.CoapMessage {
    return this.send({
      code: method,
      token: Buffer.from([this.#messageId & 0xff, 0x5a]),
      options: [...path.map((p) => ({ number: coap.OPTION.URI_PATH, value: Buffer.from(p) })), ...query.map((q) => ({ number: coap.OPTION.URI_QUERY, value: Buffer.from(q) })), ...options],
      ...extra
    })
  }

  /** The next message matching (one received before and not yet taken counts). */
  async next (match: (m: coap.CoapMessage) => boolean, what = 'a CoAP message', ms = 15_000): Promise<coap.CoapMessage> {
    const before = this.received.find((m) => !this.#taken.has(m) && match(m))
    if (before !== undefined) {
      this.#taken.add(before)
      return before
    }
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${what}: none within ${ms} ms`)), ms)
      this.#waiters.push({
        match,
        resolve: (m) => {
          clearTimeout(timer)
          resolve(m)
        }
      })
    })
  }

  /**
   * A CON sent again every `everyMs` until its answer comes: a client's retransmission, for datagrams a flood may drop.
   * The answer is the ACK (or RST) echoing the message id; the gateway's own NON and CON messages carry ids of its
   * own numbering, which may equal ours.
   */
  async exchange (message: coap.CoapMessage, everyMs = 500): Promise<coap.CoapMessage> {
    const bytes = coap.serialize(message)
    const timer = setInterval(() => this.sendBytes(bytes), everyMs)
    try {
      return await this.next((m) => m.messageId === message.messageId && (m.type === coap.TYPE.ACK || m.type === coap.TYPE.RST), `the answer to ${message.messageId}`, 30_000)
    } finally {
      clearInterval(timer)
    }
  }

  ack (message: coap.CoapMessage): void {
    this.send({ type: coap.TYPE.ACK, code: coap.CODE.EMPTY, messageId: message.messageId })
  }

  reset (message: coap.CoapMessage): void {
    this.send({ type: coap.TYPE.RST, code: coap.CODE.EMPTY, messageId: message.messageId })
  }

  close (): void {
    this.socket.close()
  }
}
