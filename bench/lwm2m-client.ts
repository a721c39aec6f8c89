// A raw LwM2M device on one UDP socket, for the gateways section: it
// registers with broker_lwm2m (auto_observe on), answers the gateway's
// Observe of /3/0 and then sends notifications (NON 2.05, TLV of resource 9)
// as fast as the runner's window lets it: each write() sends `count`
// datagrams built from one template (message id and Observe number patched).
import { createSocket, type Socket } from 'node:dgram'
import { EventEmitter } from 'node:events'
import { generate, parse } from 'coap-packet'

const TLV_FORMAT = Buffer.from([0x2d, 0x16])

export class Lwm2mPublisher {
  private closing = false
  private messageId = 100
  private seq = 1
  private template: Buffer = Buffer.alloc(0)
  private seqAt = 0

  /** the pump's 'drain' (never emitted: write never says to wait) */
  readonly socket = new EventEmitter()

  private constructor (readonly udp: Socket, private readonly port: number, readonly batch: number) {}

  /** Registers `ep` and resolves once the gateway observes it; `onLost` if the gateway refuses it later. */
  static async connect (port: number, ep: string, batch: number, onLost: (err: Error) => void, timeoutMs = 10_000): Promise<Lwm2mPublisher> {
    const socket = createSocket('udp4')
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve))
    const publisher = new Lwm2mPublisher(socket, port, batch)
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${ep}: not registered and observed within ${timeoutMs} ms`)), timeoutMs)
      socket.on('message', (msg) => {
        const packet = parse(msg)
        if (packet.confirmable && packet.code !== '0.01') socket.send(generate({ code: '0.00', ack: true, messageId: packet.messageId }), port, '127.0.0.1')
        if (packet.code.startsWith('4.') || packet.code.startsWith('5.')) {
          clearTimeout(timer)
          reject(new Error(`${ep}: Register refused ${packet.code} ${packet.payload.toString()}`))
        } else if (packet.code === '0.01' && packet.options.some((o) => o.name === 'Observe')) {
          // the gateway's auto-observe: answer it, then notify with its token
          socket.send(generate({ code: '2.05', ack: true, messageId: packet.messageId, token: packet.token, options: [{ name: 'Observe', value: Buffer.from([0, 0, 1]) }, { name: 'Content-Format', value: TLV_FORMAT }], payload: Buffer.from([0xc1, 0x09, 0x64]) }), port, '127.0.0.1')
          publisher.template = generate({ code: '2.05', confirmable: false, messageId: 0, token: packet.token, options: [{ name: 'Observe', value: Buffer.from([0, 0, 2]) }, { name: 'Content-Format', value: TLV_FORMAT }], payload: Buffer.from([0xc1, 0x09, 0x63]) })
          publisher.seqAt = 4 + packet.token.length + 1
          clearTimeout(timer)
          resolve()
        }
      })
      socket.send(generate({
        code: '0.02',
        confirmable: true,
        messageId: 1,
        token: Buffer.from([1]),
        options: [{ name: 'Uri-Path', value: Buffer.from('rd') }, { name: 'Uri-Query', value: Buffer.from(`ep=${ep}`) }, { name: 'Uri-Query', value: Buffer.from('lt=600') }],
        payload: Buffer.from('</3/0>')
      }), port, '127.0.0.1')
    })
    socket.removeAllListeners('message')
    socket.on('message', (msg) => {
      if (parse(msg).reset && !publisher.closing) onLost(new Error(`${ep}: the gateway reset the observation`))
    })
    return publisher
  }

  /** Sends `batch` notifications; UDP has no back-pressure here: always true. */
  write (_bytes?: Buffer): boolean {
    for (let i = 0; i < this.batch; i++) {
      const datagram = Buffer.from(this.template)
      this.messageId = (this.messageId + 1) & 0xffff
      this.seq = (this.seq + 1) & 0xffffff
      datagram.writeUInt16BE(this.messageId, 2)
      datagram.writeUIntBE(this.seq, this.seqAt, 3)
      this.udp.send(datagram, this.port, '127.0.0.1')
    }
    return true
  }

  close (): void {
    this.closing = true
    this.udp.close()
  }
}
