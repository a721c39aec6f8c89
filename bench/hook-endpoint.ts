// The live web hook endpoint of the `web-hook` section, started by the runner
// like a server (bench/servers.ts): an HTTP server on 127.0.0.1 (the port is
// the first argument) answering 200 to every POST, keep-alive. `GET /count`
// answers how many POSTs it answered so far (and is not counted).
import { createServer } from 'node:http'

const port = Number(process.argv[2])
let count = 0
const server = createServer((req, res) => {
  req.resume()
  req.once('end', () => {
    if (req.method === 'GET' && req.url === '/count') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ count }))
      return
    }
    count++
    res.writeHead(200, { 'content-length': '2' }).end('ok')
  })
})
server.keepAliveTimeout = 60_000
server.listen(port, '127.0.0.1')
