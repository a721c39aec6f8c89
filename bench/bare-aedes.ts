// Bare Aedes on 127.0.0.1:<port>: the same release as the broker's engine but
// unpatched (`aedes-unpatched`, an aliased install that patch-package leaves
// alone), default in-memory persistence, no options: the baseline the broker
// is compared with, so the patch's own cost is measured.
// Usage: node dist/bench/bare-aedes.js <port>
import net from 'node:net'

const port = Number(process.argv[2])
if (!Number.isInteger(port) || port <= 0 || port > 65535) {
  process.stderr.write('usage: bare-aedes <port>\n')
  process.exit(2)
}

const { Aedes } = await import('aedes-unpatched')
const broker = await Aedes.createBroker()
const server = net.createServer(broker.handle)
server.listen(port, '127.0.0.1')

function stop (): void {
  server.close()
  broker.close(() => process.exit(0))
  // Connections that do not close promptly must not keep the process alive.
  setTimeout(() => process.exit(0), 2000).unref()
}
process.once('SIGTERM', stop)
process.once('SIGINT', stop)
