// broker_sn: the MQTT-SN 1.2 gateway over UDP (EMQ X 3.x emqx_sn). Each
// MQTT-SN client, keyed by its UDP address, is a client of the broker: an
// in-process MQTT connection to the engine (`ctx.gateway.connect`, the kit's
// GatewayClient), so the auth chain, the ACL, bans, kicks, the listings,
// metrics and `$SYS` presence apply to it as to any MQTT client. codec.ts
// reads and writes the packets, gateway.ts is the socket, session.ts one
// client, outbox.ts what goes to it; README.md says what maps to what.
import { definePlugin, listenOn } from '../../lib/plugin-kit/index.js'
import { snCounters } from './counters.js'
import { SnGateway } from './gateway.js'
import { schema, type SnConfig } from './settings.js'

const VERSION = '0.1.0'

export default definePlugin<SnConfig>({
  name: 'broker_sn',
  version: VERSION,
  description: 'MQTT-SN 1.2 gateway over UDP: MQTT-SN clients publish and subscribe to MQTT topics',
  schema,

  async load (ctx) {
    const gateway = new SnGateway(ctx, snCounters(ctx))
    const address = listenOn(ctx.config['mqtt.sn.port'])
    const port = await gateway.start(address.host, address.port)
    ctx.logger.info({ address: `${address.host}:${port}` }, 'MQTT-SN gateway started (UDP)')
    ctx.listeners.add(() => gateway.listenerRecord())
  }
})
