// The live web hook endpoint of the `web-hook` section, started by the runner
// like a server (bench/servers.ts) on 127.0.0.1 (the port is the first
// argument). It is the peer, not what is measured, and shares the machine's
// cores with the broker: so it costs what a fast endpoint would, a plain TCP
// server that frames HTTP/1.1 requests (headers, then `content-length` bytes
// of body, never parsed; the length found in the bytes, as a compiled server
// would, not in a string made of each head) and answers each `200` with no
// body, the answers to the requests of one read in one write (pipelined
// requests included).
// `GET /count` answers how many POSTs it answered so far (and is not counted).
import { createServer, type Socket } from 'node:net'

const port = Number(process.argv[2])
const OK = Buffer.from('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n', 'latin1')
const HEAD_END = Buffer.from('\r\n\r\n', 'latin1')
/** the field as the web hook writes it: found as bytes, no string made; any other spelling goes through LENGTH */
const LENGTH_FIELD = Buffer.from('\r\ncontent-length: ', 'latin1')
const LENGTH = /\r\ncontent-length:[ \t]*(\d+)/i
const GET = 0x47
let count = 0

/** The body length a request head (`data[from, end)`) declares. */
function bodyLength (data: Buffer, from: number, end: number): number {
  const field = data.indexOf(LENGTH_FIELD, from)
  if (field < 0 || field > end) return Number(LENGTH.exec(data.toString('latin1', from, end))?.[1] ?? 0)
  let length = 0
  for (let at = field + LENGTH_FIELD.length; data[at] >= 0x30 && data[at] <= 0x39; at++) length = length * 10 + data[at] - 0x30
  return length
}

function serve (socket: Socket): void {
  let pending = Buffer.alloc(0)
  socket.setNoDelay(true)
  socket.on('data', (chunk: Buffer) => {
    const data = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
    const answers: Buffer[] = []
    let at = 0
    for (;;) {
      const end = data.indexOf(HEAD_END, at)
      if (end < 0) break
      const total = end + HEAD_END.length + bodyLength(data, at, end)
      if (data.length < total) break
      if (data[at] === GET && data.toString('latin1', at, at + 11) === 'GET /count ') {
        const body = JSON.stringify({ count })
        answers.push(Buffer.from(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`, 'latin1'))
      } else {
        count++
        answers.push(OK)
      }
      at = total
    }
    pending = at === data.length ? Buffer.alloc(0) : Buffer.from(data.subarray(at))
    if (answers.length > 0) socket.write(answers.length === 1 ? answers[0] : Buffer.concat(answers))
  })
  socket.on('error', () => socket.destroy())
}

createServer(serve).listen(port, '127.0.0.1')
