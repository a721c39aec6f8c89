// broker_stomp: the STOMP 1.0/1.1/1.2 gateway (EMQ X 3.x emqx_stomp). A TCP
// listener (`stomp.listener`, 61613) whose clients are clients of the
// broker: each STOMP connection is an in-process MQTT connection to the
// engine (`ctx.gateway.connect`, the kit's GatewayClient), so the auth
// chain, the ACL, bans, kicks, the listings, metrics and `$SYS` presence
// apply to it as to any MQTT client. Destinations are MQTT topics (filters
// with wildcards in SUBSCRIBE). session.ts is one connection; README.md
// says what maps to what.
import { timingSafeEqual } from 'node:crypto'
import { createServer } from 'node:net'
import { definePlugin, listen, listenOn, type AuthenticateAnswer, type AuthenticateRequest, type PluginContext } from '../../lib/plugin-kit/index.js'
import { schema, type StompConfig } from './settings.js'
import { PROTOCOL, StompSession, type ListenerCounts, type StompCounters } from './session.js'

const VERSION = '0.1.0'

/**
 * `stomp.default_user`: the gateway's own account, as in EMQ X. A STOMP
 * client logging in with it is let in here, first in the auth chain; any
 * other login goes on to the rest of the chain. An MQTT client is never
 * answered here.
 */
export function defaultUser (ctx: PluginContext<StompConfig>): (request: AuthenticateRequest) => AuthenticateAnswer {
  return ({ client, password }) => {
    const login = ctx.config['stomp.default_user.login']
    if (client.protocol !== PROTOCOL || login === '' || client.username !== login || password === undefined) return 'ignore'
    const expected = Buffer.from(ctx.config['stomp.default_user.passcode'])
    return expected.length === password.length && timingSafeEqual(expected, password) ? 'allow' : 'ignore'
  }
}

export default definePlugin<StompConfig>({
  name: 'broker_stomp',
  version: VERSION,
  description: 'STOMP 1.0/1.1/1.2 gateway: STOMP clients publish and subscribe to MQTT topics',
  schema,

  async load (ctx) {
    const counters: StompCounters = {
      received: ctx.metrics.counter('stomp/frames/received', 'STOMP frames received'),
      sent: ctx.metrics.counter('stomp/frames/sent', 'STOMP frames sent'),
      malformed: ctx.metrics.counter('stomp/frames/malformed', 'STOMP frames refused as malformed (ERROR, connection closed)'),
      tooLarge: ctx.metrics.counter('stomp/frames/too_large', 'STOMP frames refused over the stomp.frame.* limits (ERROR, connection closed)')
    }
    const listener: ListenerCounts = { current: 0, closed: 0, kicked: 0 }
    ctx.hooks.add('client.authenticate', defaultUser(ctx), 1000)

    const deps = { ctx, counters, listener, server: `broker_stomp/${VERSION}` }
    const server = ctx.servers.add(createServer((socket) => new StompSession(socket, deps)))
    server.maxConnections = ctx.config['stomp.listener.max_connections']
    // over max_connections Node.js closes the socket at once
    server.on('drop', () => { listener.closed++ })
    ctx.onSettingChange('stomp.listener.max_connections', (max) => { server.maxConnections = max })
    // the other live settings are read where they are used: a change applies to the next frame or CONNECT

    const address = listenOn(ctx.config['stomp.listener'])
    address.port = await listen(server, address, 'stomp.listener')
    ctx.logger.info({ address: `${address.host}:${address.port}` }, 'STOMP listener started')
    ctx.listeners.add(() => ({
      protocol: PROTOCOL,
      listen_on: `${address.host}:${address.port}`,
      acceptors: ctx.config['stomp.listener.acceptors'],
      max_conns: ctx.config['stomp.listener.max_connections'],
      current_conns: listener.current,
      shutdown_count: listener.closed === 0 && listener.kicked === 0 ? [] : { closed: listener.closed, kicked: listener.kicked }
    }))
  }
})
