// What Node's `net` alone reaches on a connect storm: a server that accepts,
// waits for the first bytes (the CONNECT), answers a fixed CONNACK and keeps
// the socket idle. No MQTT parsing, no session, no engine: the floor under
// any broker written on `net.Socket` (bench/connect-storm.ts compares it).
// Usage: node dist/bench/net-floor.js <port>
import net from 'node:net'

const port = Number(process.argv[2])
if (!Number.isInteger(port) || port <= 0 || port > 65535) {
  process.stderr.write('usage: net-floor <port>\n')
  process.exit(2)
}

const CONNACK = Buffer.from([0x20, 0x02, 0x00, 0x00])
const sockets = new Set<net.Socket>()
const server = net.createServer((socket) => {
  sockets.add(socket)
  socket.once('data', () => socket.write(CONNACK))
  socket.on('data', () => {})
  socket.on('error', () => {})
  socket.once('close', () => sockets.delete(socket))
})
server.listen(port, '127.0.0.1')

function stop (): void {
  server.close()
  for (const socket of sockets) socket.destroy()
  process.exit(0)
}
process.once('SIGTERM', stop)
process.once('SIGINT', stop)
