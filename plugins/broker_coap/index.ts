// broker_coap: the CoAP gateway (RFC 7252 over UDP; EMQ X 3.x emqx_coap).
// One UDP socket (`coap.port`, 5683) read by the kit's CoAP endpoint
// (lib/plugin-kit/coap: deduplication, CON retransmission, block-wise
// transfer); its requests are EMQ X's `coap://host/mqtt/<topic>?c=…&u=…&p=…`
// (gateway.ts), each client id a client of the broker over an in-process
// MQTT link (client.ts), so the auth chain, the ACL, bans, kicks, the
// listings, metrics and `$SYS` presence apply to it. DTLS is not served:
// README.md says why.
import { createSocket, type Socket } from 'node:dgram'
import { isIPv6 } from 'node:net'
import { coap, definePlugin, listenOn } from '../../lib/plugin-kit/index.js'
import { PROTOCOL } from './client.js'
import { CoapGateway } from './gateway.js'
import { schema, transmission, type CoapConfig } from './settings.js'

const VERSION = '0.1.0'
/** the socket's receive buffer asked of the kernel (capped at net.core.rmem_max): datagrams past a full buffer are lost, so a burst needs room */
const RECEIVE_BUFFER = 4 * 1024 * 1024

async function bind (socket: Socket, host: string, port: number): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject)
    socket.bind(port, host, () => {
      socket.off('error', reject)
      resolve()
    })
  }).catch((err: NodeJS.ErrnoException) => {
    throw Object.assign(new Error(`coap.port: cannot listen on ${host}:${port} (${err.code ?? err.message})`), { code: err.code })
  })
  return socket.address().port
}

export default definePlugin<CoapConfig>({
  name: 'broker_coap',
  version: VERSION,
  description: 'CoAP gateway: CoAP clients publish (PUT/POST) and observe (GET with Observe) MQTT topics',
  schema,

  async load (ctx) {
    const counter = (key: string, help: string): ReturnType<typeof ctx.metrics.counter> => ctx.metrics.counter(`coap/${key}`, help)
    const counters = {
      received: counter('messages/received', 'CoAP datagrams received'),
      sent: counter('messages/sent', 'CoAP datagrams sent'),
      malformed: counter('messages/malformed', 'CoAP datagrams dropped as malformed (a CON with a readable header is answered with RST)'),
      duplicate: counter('messages/duplicate', 'CoAP requests received again (same peer and message id): answered again, not handled again'),
      retransmitted: counter('messages/retransmitted', 'CoAP CON messages of the gateway sent again for want of an ACK'),
      tooLarge: counter('messages/too_large', 'CoAP requests refused with 4.13 (body over coap.max_body_size)'),
      notified: counter('notifications/sent', 'CoAP notifications sent (NON) or acknowledged (CON)'),
      notifyFailed: counter('notifications/failed', 'CoAP notifications reset, unacknowledged or dropped (the observation ends)'),
      refused: counter('requests/refused', 'CoAP requests answered with a 4.xx or 5.xx code')
    }
    const address = listenOn(ctx.config['coap.port'])
    const socket = ctx.servers.add(createSocket({ type: isIPv6(address.host) ? 'udp6' : 'udp4', recvBufferSize: RECEIVE_BUFFER }))
    socket.on('error', (err) => ctx.logger.warn({ err }, 'CoAP socket error'))
    const endpoint = new coap.CoapEndpoint({
      send: (datagram, peer) => socket.send(datagram, peer.port, peer.address),
      timers: ctx.timers,
      onRequest: (request, respond) => gateway.handle(request, respond),
      limits: { maxBody: ctx.config['coap.max_body_size'] },
      transmission: () => transmission(ctx.config),
      counters,
      onError: (err) => ctx.logger.error({ err }, 'CoAP endpoint error')
    })
    const gateway = new CoapGateway(ctx, endpoint, counters)
    ctx.onUnload(() => {
      gateway.disconnectAll()
      endpoint.close()
    })
    socket.on('message', (datagram, rinfo) => endpoint.receive(datagram, { address: rinfo.address, port: rinfo.port }))
    address.port = await bind(socket, address.host, address.port)
    ctx.logger.info({ address: `${address.host}:${address.port}` }, 'CoAP listener started')
    ctx.listeners.add(() => ({
      protocol: PROTOCOL,
      listen_on: `${address.host}:${address.port}`,
      acceptors: 1,
      max_conns: ctx.config['coap.max_clients'],
      current_conns: gateway.clients,
      shutdown_count: gateway.listener.closed === 0 && gateway.listener.kicked === 0 ? [] : { ...gateway.listener }
    }))
  }
})
