// A raw MQTT client over a TCP socket, for tests that need the exact wire
// (MQTT.js hides or refuses some of it): writes packets with mqtt-packet and
// queues every packet the broker sends.
import { connect as netConnect, type Socket } from 'node:net'
import { once } from 'node:events'
import mqttPacket, { type Packet } from 'mqtt-packet'

export class RawClient {
  readonly packets: Packet[] = []
  closed = false
  readonly #waiters: Array<() => void> = []

  private constructor (readonly socket: Socket, readonly protocolVersion: 3 | 4 | 5) {
    const parser = mqttPacket.parser({ protocolVersion })
    parser.on('packet', (packet: Packet) => {
      this.packets.push(packet)
      this.#wake()
    })
    parser.on('error', () => socket.destroy())
    socket.on('data', (data) => parser.parse(data))
    socket.on('error', () => {})
    socket.on('close', () => {
      this.closed = true
      this.#wake()
    })
  }

  /** A client over a connected socket (a TLS socket, or one the test already wrote to). */
  static over (socket: Socket, protocolVersion: 3 | 4 | 5 = 4): RawClient {
    return new RawClient(socket, protocolVersion)
  }

  static async open (port: number, protocolVersion: 3 | 4 | 5 = 4): Promise<RawClient> {
    const socket = netConnect(port, '127.0.0.1')
    await once(socket, 'connect')
    return new RawClient(socket, protocolVersion)
  }

  send (packet: Packet): void {
    this.socket.write(mqttPacket.generate(packet, { protocolVersion: this.protocolVersion }))
  }

  /** Sends CONNECT and resolves with the CONNACK. */
  async connect (fields: Partial<mqttPacket.IConnectPacket> = {}): Promise<mqttPacket.IConnackPacket> {
    this.send({
      cmd: 'connect',
      protocolId: this.protocolVersion === 3 ? 'MQIsdp' : 'MQTT',
      protocolVersion: this.protocolVersion,
      clean: true,
      keepalive: 60,
      clientId: '',
      ...fields
    } as mqttPacket.IConnectPacket)
    return await this.next('connack') as mqttPacket.IConnackPacket
  }

  /** Resolves with the next received packet of that type, or of one of those types (others stay queued). */
  async next (cmd: Packet['cmd'] | Array<Packet['cmd']>, timeoutMs = 5000): Promise<Packet> {
    const deadline = Date.now() + timeoutMs
    const wanted = Array.isArray(cmd) ? cmd : [cmd]
    for (;;) {
      const index = this.packets.findIndex((p) => wanted.includes(p.cmd))
      if (index >= 0) return this.packets.splice(index, 1)[0]
      if (this.closed) throw new Error(`connection closed while waiting for ${cmd}`)
      const left = deadline - Date.now()
      if (left <= 0) throw new Error(`timed out waiting for ${cmd}`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left)
        this.#waiters.push(() => { clearTimeout(timer); resolve() })
      })
    }
  }

  /** Resolves true when the broker closes the connection within `timeoutMs`. */
  async waitClosed (timeoutMs = 5000): Promise<boolean> {
    if (this.closed) return true
    const closed = once(this.socket, 'close').then(() => true)
    const timeout = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), timeoutMs).unref())
    return await Promise.race([closed, timeout])
  }

  end (): void {
    this.socket.destroy()
  }

  #wake (): void {
    for (const wake of this.#waiters.splice(0)) wake()
  }
}
