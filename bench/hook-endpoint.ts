// The live web hook endpoint of the `web-hook` section, started by the runner
// like a server (bench/servers.ts) on 127.0.0.1 (the port is the first
// argument). It is the peer, not what is measured, and shares the machine's
// cores with the broker: so it costs what a fast endpoint would, a plain TCP
// server that frames HTTP/1.1 requests (headers, then `content-length` bytes
// of body, never parsed) and answers each `200` with no body, the answers to
// the requests of one read in one write (pipelined requests included).
// `GET /count` answers how many POSTs it answered so far (and is not counted).
import { createServer, type Socket } from 'node:net'

const port = Number(process.argv[2])
const OK = Buffer.from('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n', 'latin1')
const HEAD_END = Buffer.from('\r\n\r\n', 'latin1')
const LENGTH = /\r\ncontent-length:[ \t]*(\d+)/i
let count = 0

function serve (socket: Socket): void {
  let pending = Buffer.alloc(0)
  socket.setNoDelay(true)
  socket.on('data', (chunk: Buffer) => {
    let data = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
    const answers: Buffer[] = []
    for (;;) {
      const end = data.indexOf(HEAD_END)
      if (end < 0) break
      const head = data.toString('latin1', 0, end)
      const total = end + HEAD_END.length + Number(LENGTH.exec(head)?.[1] ?? 0)
      if (data.length < total) break
      if (head.startsWith('GET /count ')) {
        const body = JSON.stringify({ count })
        answers.push(Buffer.from(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`, 'latin1'))
      } else {
        count++
        answers.push(OK)
      }
      data = data.subarray(total)
    }
    pending = data.length === 0 ? Buffer.alloc(0) : Buffer.from(data)
    if (answers.length > 0) socket.write(answers.length === 1 ? answers[0] : Buffer.concat(answers))
  })
  socket.on('error', () => socket.destroy())
}

createServer(serve).listen(port, '127.0.0.1')
