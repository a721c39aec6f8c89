// A raw CoAP publisher on one UDP socket, for the gateways section: one CON
// PUT first (its 2.04 says the gateway connected the client id), then NON
// PUT requests to coap://…/mqtt/<topic>?c=<id> written as given (a batch is
// `count` copies of one datagram, each sent with its own message id: the
// gateway deduplicates by message id), with No-Response: 2 (RFC 7967: no 2.04
// for them; an error answer would still come, and is read and dropped).
import { createSocket, type Socket } from 'node:dgram'
import { coap } from '../lib/plugin-kit/index.js'

export class CoapPublisher {
  #messageId = 0

  private constructor (readonly socket: Socket, readonly port: number, readonly datagramLength: number) {}

  /** Resolves once the first (CON) PUT was answered 2.04. */
  static async connect (port: number, clientId: string, topic: string, payload: Buffer, timeoutMs = 10_000): Promise<CoapPublisher> {
    const socket = createSocket('udp4')
    const datagram = request(coap.TYPE.NON, 0, clientId, topic, payload)
    const publisher = new CoapPublisher(socket, port, datagram.length)
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no CoAP 2.04 within ${timeoutMs} ms`)), timeoutMs)
      socket.once('message', (bytes) => {
        clearTimeout(timer)
        const answer = coap.parse(bytes)
        if (answer.code === coap.CODE.CHANGED) resolve()
        else reject(new Error(`CoAP PUT refused: ${coap.codeText(answer.code)} ${answer.payload.toString()}`))
      })
      socket.send(request(coap.TYPE.CON, 0, clientId, topic, payload), port, '127.0.0.1')
    })
    socket.on('message', () => { /* the NON answers */ })
    socket.on('error', () => { /* a full send buffer drops the datagram: counted as lost by the window */ })
    return publisher
  }

  /** Sends each datagram of the batch (as made by `putBatch`) with a message id of its own; UDP: never full. */
  write (batch: Buffer): boolean {
    for (let at = 0; at < batch.length; at += this.datagramLength) {
      const datagram = Buffer.from(batch.subarray(at, at + this.datagramLength))
      this.#messageId = (this.#messageId + 1) & 0xffff
      datagram.writeUInt16BE(this.#messageId, 2)
      this.socket.send(datagram, this.port, '127.0.0.1')
    }
    return true
  }

  close (): void {
    this.socket.close()
  }
}

function request (type: coap.CoapType, messageId: number, clientId: string, topic: string, payload: Buffer): Buffer {
  return coap.serialize({
    type,
    code: coap.CODE.PUT,
    messageId,
    token: Buffer.alloc(0),
    options: [
      ...['mqtt', ...topic.split('/')].map((segment) => ({ number: coap.OPTION.URI_PATH, value: Buffer.from(segment) })),
      { number: coap.OPTION.URI_QUERY, value: Buffer.from(`c=${clientId}`) },
      // RFC 7967: no 2.04 for the NON PUTs (a telemetry device's choice); a refusal still comes back
      ...(type === coap.TYPE.NON ? [{ number: coap.OPTION.NO_RESPONSE, value: coap.uintOption(2) }] : [])
    ],
    payload
  })
}

/** `count` NON PUT datagrams of `payload` to `topic`, back to back (CoapPublisher.write sends them one by one). */
export function putBatch (clientId: string, topic: string, payload: Buffer, count: number): Buffer {
  const one = request(coap.TYPE.NON, 0, clientId, topic, payload)
  return Buffer.concat(Array.from({ length: count }, () => one))
}
