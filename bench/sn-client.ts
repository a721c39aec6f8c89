// A raw MQTT-SN 1.2 publisher on one UDP socket, for the gateways section:
// CONNECT, wait for CONNACK, REGISTER its topic, then PUBLISH datagrams at
// QoS 0 written as given (batches built once by snPublishBatch: the same
// datagram `count` times). UDP has no back-pressure: `write` reports a full
// send queue, and `socket` emits 'drain' once it is empty again.
import { createSocket, type Socket } from 'node:dgram'
import { EventEmitter } from 'node:events'
import { decode, encode, flags, type SnPacket } from '../plugins/broker_sn/codec.js'

/** datagrams queued in the socket beyond which `write` says to wait for 'drain' */
const QUEUE_HIGH = 256

export class SnPublisher {
  /** emits 'drain' when the send queue empties after `write` said false */
  readonly socket = new EventEmitter()
  #waiting = false

  private constructor (readonly udp: Socket, readonly port: number, readonly topicId: number) {}

  /** Connects as `clientId` and registers `topic`; resolves with a publisher of it. */
  static async connect (port: number, clientId: string, topic: string, onLost: (err: Error) => void, timeoutMs = 10_000): Promise<SnPublisher> {
    const udp = createSocket('udp4')
    udp.bind(0, '127.0.0.1')
    const answers: SnPacket[] = []
    let wake: () => void = () => {}
    udp.on('message', (datagram) => {
      try {
        answers.push(decode(datagram))
      } catch {
        return
      }
      wake()
    })
    const ask = async (packet: SnPacket, type: SnPacket['type']): Promise<SnPacket> => {
      const from = answers.length
      udp.send(encode(packet), port, '127.0.0.1')
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const found = answers.slice(from).find((p) => p.type === type)
        if (found !== undefined) return found
        if (Date.now() > deadline) throw new Error(`no MQTT-SN ${type.toUpperCase()} within ${timeoutMs} ms`)
        await new Promise<void>((resolve) => { wake = resolve; setTimeout(resolve, 100) })
      }
    }
    const connack = await ask({ type: 'connect', flags: flags({ cleanSession: true }), protocolId: 1, duration: 300, clientId }, 'connack')
    if (connack.type !== 'connack' || connack.returnCode !== 0) throw new Error(`MQTT-SN CONNECT refused: ${JSON.stringify(connack)}`)
    const regack = await ask({ type: 'register', topicId: 0, msgId: 1, topicName: topic }, 'regack')
    if (regack.type !== 'regack' || regack.returnCode !== 0) throw new Error(`MQTT-SN REGISTER refused: ${JSON.stringify(regack)}`)
    const publisher = new SnPublisher(udp, port, regack.topicId)
    // the gateway ends a connection with DISCONNECT (kicked, lost)
    udp.on('message', (datagram) => { if (datagram[1] === 0x18) onLost(new Error('MQTT-SN connection ended by the gateway')) })
    return publisher
  }

  /** A PUBLISH at QoS 0 of `payload` to the registered topic, `count` times back to back. */
  batch (payload: Buffer, count: number): Buffer {
    const one = encode({ type: 'publish', flags: flags(), topicId: this.topicId, msgId: 0, data: payload })
    return Buffer.concat(Array.from({ length: count }, () => one))
  }

  /** Sends each datagram of a batch; false when the socket's send queue is long (wait for 'drain'). */
  write (batch: Buffer): boolean {
    const size = batch[0]
    for (let at = 0; at + size <= batch.length; at += size) this.udp.send(batch.subarray(at, at + size), this.port, '127.0.0.1', () => this.#sent())
    if (this.udp.getSendQueueCount() < QUEUE_HIGH) return true
    this.#waiting = true
    return false
  }

  #sent (): void {
    if (this.#waiting && this.udp.getSendQueueCount() === 0) {
      this.#waiting = false
      this.socket.emit('drain')
    }
  }

  close (): void {
    try {
      this.udp.send(encode({ type: 'disconnect' }), this.port, '127.0.0.1')
      this.udp.close()
    } catch {
      // closed already
    }
  }
}
