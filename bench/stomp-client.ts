// A raw STOMP 1.2 publisher on one TCP socket, for the gateways section:
// CONNECT, wait for CONNECTED, then SEND frames written as given (batches
// built once by sendBatch). Whatever the server sends back after CONNECTED
// (an ERROR) ends the connection.
import net from 'node:net'

export class StompPublisher {
  private closing = false

  private constructor (readonly socket: net.Socket) {}

  /** Connects and resolves once CONNECTED came; `onLost` if the server ends the connection later. */
  static async connect (port: number, login: string, passcode: string, onLost: (err: Error) => void, timeoutMs = 10_000): Promise<StompPublisher> {
    const socket = net.connect(port, '127.0.0.1')
    socket.setNoDelay(true)
    const publisher = new StompPublisher(socket)
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no STOMP CONNECTED within ${timeoutMs} ms`)), timeoutMs)
      let head = ''
      const onData = (chunk: Buffer): void => {
        head += chunk.toString('latin1')
        if (!head.includes('\0')) return
        clearTimeout(timer)
        socket.off('data', onData)
        if (head.startsWith('CONNECTED')) resolve()
        else reject(new Error(`STOMP CONNECT refused: ${head.replace(/\0/g, '').slice(0, 200)}`))
      }
      socket.on('data', onData)
      socket.once('error', reject)
      socket.once('connect', () => socket.write(`CONNECT\naccept-version:1.2\nhost:bench\nlogin:${login}\npasscode:${passcode}\n\n\0`))
    })
    socket.on('data', (chunk: Buffer) => { if (chunk.includes('ERROR')) socket.destroy(new Error(chunk.toString('latin1').slice(0, 200))) })
    socket.on('error', () => { /* reported by 'close' */ })
    socket.on('close', () => { if (!publisher.closing) onLost(new Error('STOMP connection closed by the server')) })
    return publisher
  }

  write (bytes: Buffer): boolean {
    return this.socket.write(bytes)
  }

  close (): void {
    this.closing = true
    this.socket.destroy()
  }
}

/** `count` SEND frames of `payload` to `destination`, back to back: written with one socket.write. */
export function sendBatch (destination: string, payload: Buffer, count: number): Buffer {
  const one = Buffer.concat([Buffer.from(`SEND\ndestination:${destination}\ncontent-length:${payload.length}\n\n`), payload, Buffer.from([0])])
  return Buffer.concat(Array.from({ length: count }, () => one))
}
