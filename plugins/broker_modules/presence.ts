// The presence module (SPEC §6, EMQ X emqx_mod_presence): when a client has
// connected (its CONNACK sent) and when it has gone,
// `$SYS/brokers/<node>/clients/<clientid>/connected` and `…/disconnected`,
// QoS `module.presence.qos`, not retained. Payloads (JSON, `ts` in
// milliseconds; a missing user name is the string `undefined`, SPEC §2):
//   connected, full (EMQ X 3):  {clientid, username, ipaddress, clean_start,
//                                proto_ver, proto_name, keepalive, connack, ts}
//   connected, short (EMQ X 2): {clientid, username, ipaddress, session,
//                                version, connack, ts}, where `session` is
//                                true for a persistent session (clean start
//                                false) and `version` the protocol level
//   disconnected:               {clientid, username, reason, ts}
// `module.presence = off` switches both off; the three keys are live.
import type { ClientInfo, ConnectInfo, PluginContext } from '../../lib/plugin-kit/index.js'
import type { ModulesConfig } from './settings.js'

/** `gateway`: a protocol gateway's client (STOMP …) is announced with its own protocol and version */
interface ConnectFacts { cleanStart: boolean, protoVer: number, keepalive: number, gateway?: ClientInfo['gateway'] }

/** CONNECTs whose CONNACK is still to come: a bound, whatever a flood of half-done connects does. */
const MAX_PENDING = 65536

/** Protocol level 3 is MQIsdp (MQTT 3.1); 4 and 5 are MQTT (the node refuses a level under the other name). */
const protoName = (level: number): string => level === 3 ? 'MQIsdp' : 'MQTT'

export function presence (ctx: PluginContext<ModulesConfig>): void {
  // what each CONNECT said, until its client is connected, refused or gone
  const connects = new Map<string, ConnectFacts>()
  // clients whose `connected` notice went out, and those that went before it did
  const announced = new WeakSet<ClientInfo>()
  const goneEarly = new WeakMap<ClientInfo, { reason: string, facts?: ConnectFacts }>()
  const on = (): boolean => ctx.config['module.presence']

  const send = (clientId: string, event: 'connected' | 'disconnected', payload: object): void => {
    const qos = ctx.config['module.presence.qos']
    ctx.broker.publish({ topic: `$SYS/brokers/${ctx.node.name}/clients/${clientId}/${event}`, payload: JSON.stringify(payload), qos, retain: false })
      // the engine closes before the plugins unload: the last notices of a stopping node have nowhere to go
      .catch((err: Error) => ctx.logger.debug({ err, clientId, event }, 'presence notice not published'))
  }

  const disconnected = (client: ClientInfo, reason: string): void => {
    send(client.clientId, 'disconnected', { clientid: client.clientId, username: client.username ?? 'undefined', reason, ts: Date.now() })
  }

  ctx.hooks.add('client.connect', (connect) => {
    if (!on()) return
    if (connects.size >= MAX_PENDING) connects.delete(connects.keys().next().value!)
    connects.set(connect.clientId, { cleanStart: connect.cleanStart, protoVer: connect.protoVer, keepalive: connect.keepalive, gateway: connect.gateway })
  })
  ctx.hooks.add('client.connack', (connect: ConnectInfo, result) => {
    if (result !== 'success') connects.delete(connect.clientId)
  })
  ctx.hooks.add('client.connected', (client) => {
    const early = goneEarly.get(client)
    const facts = early?.facts ?? connects.get(client.clientId) ?? { cleanStart: true, protoVer: client.protoVer, keepalive: 0, gateway: client.gateway }
    if (early === undefined) connects.delete(client.clientId)
    if (!on()) return
    announced.add(client)
    const common = { clientid: client.clientId, username: client.username ?? 'undefined', ipaddress: client.ipAddress }
    send(client.clientId, 'connected', ctx.config['module.presence.format'] === 'short'
      ? { ...common, session: !facts.cleanStart, version: facts.gateway?.protoVer ?? facts.protoVer, connack: 0, ts: Date.now() }
      : { ...common, clean_start: facts.cleanStart, proto_ver: facts.gateway?.protoVer ?? facts.protoVer, proto_name: facts.gateway?.protoName ?? protoName(facts.protoVer), keepalive: facts.keepalive, connack: 0, ts: Date.now() })
    // a client that closed at once may be ready after its disconnect: the two notices still go in order
    if (early !== undefined) disconnected(client, early.reason)
  })
  ctx.hooks.add('client.disconnected', (client, reason) => {
    if (announced.has(client)) {
      if (on()) disconnected(client, reason)
      return
    }
    // not connected yet (or never announced): keep what its `connected` notice needs, if it comes
    goneEarly.set(client, { reason, facts: connects.get(client.clientId) })
    connects.delete(client.clientId)
  })
  ctx.onUnload(() => connects.clear())
}
